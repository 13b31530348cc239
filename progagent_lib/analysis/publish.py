"""`make figures [PROFILE=cpu-smoke]`: copy a profile's latest run figures into the committed figures/.

The notebooks (and so `make reproduce` and `make test`) save figures under the run folder, runs/<profile>/figures;
this is the only writer of the committed folder the profile's `publish_figures_to` names (cpu-smoke: figures/,
cpu-study: figures/cpu-study). Each figure goes with its data (NAME.vl.json: the spec with the rows drawn), and a
figure without data rows, or one that draws only a note, is refused: nothing is copied then.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .profiles import ProfileError, load_profile
from .style import figure_data_problems, figure_files


class PublishError(Exception):
    """Nothing to publish, or a figure that is not a result (no data beside it, no rows, a placeholder)."""


def run_figures(folder: Path) -> list[str]:
    """The names of the figures saved in `folder` (each NAME.png)."""
    return sorted(path.stem for path in Path(folder).glob("*.png"))


def publish_figures(
    profile: str = "cpu-smoke", run_dir: str | Path | None = None, target: str | Path | None = None
) -> list[Path]:
    """Copy every figure of the profile's run folder (PNG, SVG, NAME.vl.json) into its published folder (or
    `target`); returns the files written. All or nothing: one figure without data refuses the lot (PublishError,
    naming each)."""
    prof = load_profile(profile, run_dir)
    target = Path(target) if target is not None else prof.published_figures_dir
    if target is None:
        raise PublishError(f"profile {prof.name!r} publishes no figures (publish_figures_to: null in profiles.yaml)")
    source = prof.figures_dir
    names = run_figures(source)
    if not names:
        raise PublishError(f"{source}: no figures; run `make reproduce PROFILE={prof.name}` first")
    problems = {name: figure_data_problems(source / f"{name}.png") for name in names}
    problems.update({name: [f"no {name}.svg beside it"] for name in names if not (source / f"{name}.svg").is_file()})
    refused = {name: found for name, found in problems.items() if found}
    if refused:
        listing = "; ".join(f"{name}: {', '.join(found)}" for name, found in sorted(refused.items()))
        raise PublishError(
            f"{source}: {len(refused)} figure(s) are not results, nothing published ({listing}); "
            "rerun their notebooks or delete them"
        )
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        for path in figure_files(name, source):
            written.append(Path(shutil.copyfile(path, target / path.name)))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m progagent_lib.analysis.publish",
        description="Copy a profile's run figures into the committed figures/.",
    )
    parser.add_argument("--profile", default="cpu-smoke", help="profile in profiles.yaml (default cpu-smoke)")
    parser.add_argument("--run-dir", default=None, help="the run folder (default runs/<profile>)")
    args = parser.parse_args(argv)
    try:
        written = publish_figures(args.profile, args.run_dir)
    except (PublishError, ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    figures = sorted({path.name.split(".")[0] for path in written})
    print(f"published {len(figures)} figure(s) into {written[0].parent}: {', '.join(figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
