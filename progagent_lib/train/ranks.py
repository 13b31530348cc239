"""One pipeline, N ranks (`torchrun` / `accelerate launch`): which work every rank does, and which one rank does.

Training (SFT, GSPO, the control) is collective: every rank trains on its part of the data. Everything else — the
teacher's episodes, the held-out splits, the evaluations, the learning rows, tables and summaries — is computed once,
on the main rank, and what the other ranks need of it is broadcast (`on_main`): so the files are written once, and
every decision that branches (reuse an evaluation or run it, resume from which checkpoint) is the main rank's, taken
once for all. A single process is rank 0 of 1, and every helper here is then a plain call.

The main rank may work for hours (an evaluation) while the others wait in `on_main`'s broadcast. That wait runs on a
gloo group of its own with a long timeout (WAIT_SECONDS), so an NCCL default group's 10-minute timeout does not fire.
"""

from __future__ import annotations

import atexit
import contextlib
import pickle
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

T = TypeVar("T")
WAIT_SECONDS = 7 * 24 * 3600  # how long a rank waits for the main one (an evaluation of the paper's scale: hours)
_state: dict[str, Any] = {"main_only": False, "wait_group": None}


def partial_state() -> Any:
    """accelerate's PartialState of this process. Made here with cpu=True on a machine without CUDA: a plain
    PartialState() under torchrun on CPU would call the run undistributed (and the trainers' CPU state, built after,
    would inherit that), so the gloo process group is set up as transformers' Trainer would for `use_cpu`."""
    import torch
    from accelerate import PartialState

    if PartialState._shared_state:
        return PartialState()
    return PartialState(cpu=not torch.cuda.is_available())


def world_size() -> int:
    return partial_state().num_processes


def rank() -> int:
    return partial_state().process_index


def is_main() -> bool:
    return partial_state().is_main_process


def barrier() -> None:
    """Every rank waits here for the others (after a checkpoint is saved, before it is read)."""
    if world_size() > 1:
        partial_state().wait_for_everyone()


@contextlib.contextmanager
def main_first() -> Iterator[None]:
    """The main rank runs the block first (e.g. builds and saves a model); the others run it after (e.g. load it)."""
    with partial_state().main_process_first():
        yield


def on_main(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` run once, on the main rank, its result (or its exception) handed to every rank.

    Called by every rank at the same point. Inside such a call (on the main rank only), a nested `on_main` is a plain
    call: the other ranks are not there to join it, and must not be asked to (no collective may run inside `fn`). What
    such a nested call caches is then the main rank's alone: build a shared cache with a call of its own first."""
    if _state["main_only"] or world_size() == 1:
        return fn(*args, **kwargs)
    import torch.distributed as dist

    payload: list[Any] = [None]
    failure: BaseException | None = None
    if is_main():
        _state["main_only"] = True
        try:
            payload[0] = (True, fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - the others must hear of any failure, or they wait for ever
            failure = exc
            payload[0] = (False, _transportable(exc))
        finally:
            _state["main_only"] = False
    dist.broadcast_object_list(payload, src=0, group=_wait_group())
    ok, value = payload[0]
    if failure is not None:
        raise failure
    if not ok:
        raise value
    return value


def _transportable(exc: BaseException) -> BaseException:
    """`exc` if it survives pickling, else a RuntimeError carrying its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - whatever unpickling raises, the message still travels
        return RuntimeError(f"on the main rank: {type(exc).__name__}: {exc}")


def _wait_group() -> Any:
    """A gloo group over every rank with a long timeout, made (collectively) at the first on_main of the run."""
    import torch.distributed as dist

    if _state["wait_group"] is None:
        _state["wait_group"] = dist.new_group(backend="gloo", timeout=timedelta(seconds=WAIT_SECONDS))
        atexit.register(_destroy_groups)
    return _state["wait_group"]


def _destroy_groups() -> None:
    """At exit, take the process groups down in order: left to the interpreter's teardown, gloo's threads were
    destroyed while joinable and a rank aborted ("terminate called without an active exception", SIGABRT)."""
    import torch.distributed as dist

    if dist.is_initialized():
        _state["wait_group"] = None
        dist.destroy_process_group()


def gather_lists(items: list[T]) -> list[T]:
    """Every rank's `items`, concatenated in rank order, on every rank (accelerate's gather_object)."""
    if world_size() == 1:
        return list(items)
    from accelerate.utils import gather_object

    return gather_object(list(items))


__all__ = [
    "WAIT_SECONDS",
    "barrier",
    "gather_lists",
    "is_main",
    "main_first",
    "on_main",
    "partial_state",
    "rank",
    "world_size",
]
