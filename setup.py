"""The one part of the build pyproject.toml cannot say: the task pool ships in the wheel as the package
`progagent_tasks`, whose folder here is tasks/ (`pip install .` then runs tasks by id outside a checkout:
progagent_lib/task/installed_pool.py). Every folder below is listed as a package, so that setuptools copies each
task's files (pyproject.toml's package-data: prompt.md, task.toml; the modules themselves as Python)."""
from setuptools import find_namespace_packages, setup


def packages_under(folder: str, name: str) -> list[str]:
    """`name` and every folder under `folder` as its subpackage, __pycache__ left out."""
    return [name, *(f"{name}.{sub}" for sub in find_namespace_packages(where=folder, exclude=["*__pycache__*"]))]


setup(packages=[*packages_under("progagent_lib", "progagent_lib"), *packages_under("tasks", "progagent_tasks")],
      package_dir={"progagent_tasks": "tasks"})
