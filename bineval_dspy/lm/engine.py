"""What an engine behind ``dspy.LM(..., engine=...)`` can do, read in one place.

DSPy needs only ``complete``. The rest is what the library adapts to: whether calls run in this process (then they
serialize and prompt order matters), how many greedy calls it decodes together, whether it continues a reply from
an assistant prefill, whether it can cap its own requests in flight. ``EngineBase`` gives the defaults a remote
LM has; ``engine_of`` returns an LM's engine, or those defaults for an LM with none (a LiteLLM provider model) or
with an engine of its own that does not say (a user's)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from bineval_dspy.enforce.steering import Steering


ENGINE_CODE_KEY = "bineval_engine_steering_code"  # request metadata: ``steering_code``, so it keys the cache


@runtime_checkable
class Engine(Protocol):
    """The capabilities the library reads from an LM's engine."""

    in_process: bool  # calls run in this process: they serialize, and prompt order matters
    supports_prefill: bool  # a request ending in an assistant message is continued from it
    supports_steering: bool  # a request's ``enforce.steering`` metadata is executed while decoding
    steering_code: str  # a digest of the engine's own code that executes a spec ('': none), sent with steered requests
    model_path: Path | None  # the model file an in-process engine runs (fine-tuning trains it)

    @property
    def parallel_sequences(self) -> int: ...  # greedy calls decoded together; 1: one at a time

    def expect(self, n: int) -> AbstractContextManager[Any]: ...  # announce n calls arriving together

    def limit_in_flight(self, most: int | None) -> bool: ...  # cap open requests; False: it cannot

    def load(self) -> None: ...  # load the model now, so a bad file fails before any row

    def unsteerable(self, steering: Steering) -> str: ...  # why part of ``steering`` cannot be executed; '': all can


class EngineBase:
    """The defaults: a remote engine that batches nothing, caps nothing and loads nothing ahead."""

    in_process = False
    supports_prefill = False
    supports_steering = False
    steering_code = ""
    model_path: Path | None = None

    @property
    def parallel_sequences(self) -> int:
        return 1

    def expect(self, n: int) -> AbstractContextManager[Any]:
        return nullcontext()

    def limit_in_flight(self, most: int | None) -> bool:
        return False

    def load(self) -> None:
        return None

    def unsteerable(self, steering: Steering) -> str:
        """An engine that steers at all executes every spec (the embedded one); a server's grammar says less."""
        return ""


class _Declared(EngineBase):
    """An engine that declares some capabilities and not others (a user's, a test's): what it declares, else the
    defaults. The one place capabilities are read by name."""

    def __init__(self, engine: object) -> None:
        self._engine = engine
        self.in_process = bool(getattr(engine, "in_process", False))
        self.supports_prefill = bool(getattr(engine, "supports_prefill", False))
        self.supports_steering = bool(getattr(engine, "supports_steering", False))
        self.steering_code = str(getattr(engine, "steering_code", "") or "")
        self.model_path = getattr(engine, "model_path", None)

    @property
    def parallel_sequences(self) -> int:
        return int(getattr(self._engine, "parallel_sequences", 1))

    def expect(self, n: int) -> AbstractContextManager[Any]:
        expect = getattr(self._engine, "expect", None)
        return expect(n) if callable(expect) else nullcontext()

    def limit_in_flight(self, most: int | None) -> bool:
        limit = getattr(self._engine, "limit_in_flight", None)
        return bool(limit(most)) if callable(limit) else False

    def load(self) -> None:
        load = getattr(self._engine, "load", None)
        if callable(load):
            load()

    def unsteerable(self, steering: Steering) -> str:
        unsteerable = getattr(self._engine, "unsteerable", None)
        return str(unsteerable(steering)) if callable(unsteerable) else ""


_DEFAULTS = EngineBase()


def engine_of(lm: object) -> Engine:
    """``lm``'s engine as an ``Engine``: itself where it is one, the capabilities it declares where it is partly
    one, the defaults where there is none (a LiteLLM provider model)."""
    engine = getattr(lm, "engine", None)
    if engine is None:
        return _DEFAULTS
    return engine if isinstance(engine, Engine) else _Declared(engine)
