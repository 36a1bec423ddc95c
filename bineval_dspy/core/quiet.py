"""The one place that quiets the backends the library loads: transformers, datasets, peft (and trl over them) and
llama.cpp. A command's stderr holds its own progress bars, notes and cost line; their advice, deprecation warnings,
loading bars and logs are noise there. Each loader calls ``quiet`` with its backends before importing them.
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from typing import Literal

Backend = Literal["transformers", "datasets", "peft", "llama_cpp"]

_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",  # everything is local: never ask a hub
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "DATASETS_VERBOSITY": "error",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",  # its fork warning, and no thread pool beside the library's own
}
# warnings raised from these packages' code (FutureWarning on renamed arguments, peft's "Could not find a config
# file"): advice to the library's authors, not to its user
_WARNING_MODULES = r"(transformers|datasets|peft|trl|accelerate|huggingface_hub|sentence_transformers)(\.|$)"


def quiet(*backends: Backend) -> None:
    """Quiets ``backends`` (their environment variables first, so call it before importing them); once each."""
    for backend in backends:
        _quiet(backend)


@functools.cache
def _quiet(backend: Backend) -> None:
    for name, value in _ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    warnings.filterwarnings("ignore", module=_WARNING_MODULES)
    if backend == "transformers":
        from tqdm.auto import tqdm
        from transformers import modeling_gguf_pytorch_utils as gguf_reading
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()
        transformers_logging.disable_progress_bar()  # "Loading weights"
        gguf_reading.tqdm = functools.partial(tqdm, disable=True)  # its GGUF bar is its own, not under that switch
    elif backend == "datasets":
        import datasets

        datasets.utils.logging.set_verbosity_error()
        datasets.disable_progress_bars()  # "Tokenizing train dataset", "Adding EOS to train dataset", ...
    elif backend == "peft":
        logging.getLogger("peft").setLevel(logging.ERROR)
    else:  # llama-cpp-python prints llama.cpp's log at its logger's level; a model made with verbose=False sets it too
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
