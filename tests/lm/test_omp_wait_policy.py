"""llama.cpp's OpenMP workers must wait passively however the library first loads llama.cpp: an experiment's plan
counted tokens with a vocabulary-only model before the engine module was imported, so llama.cpp loaded with
spinning workers and every decoding step of the run was about 10x slower on a loaded 2-core machine (issue 57)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

# The environment when llama_cpp is first imported, through the path `bineval experiment`'s plan takes.
PROBE = textwrap.dedent(
    """
    import os, sys
    seen = []
    def hook(event, args):
        if event == "import" and args[0] == "llama_cpp" and not seen:
            seen.append(os.environ.get("OMP_WAIT_POLICY"))
    sys.addaudithook(hook)
    from bineval_dspy.lm.estimate import token_counter
    _, own = token_counter("smollm2")
    print(own, seen[0] if seen else "not imported")
    """
)


@pytest.mark.embedded
def test_llama_cpp_loads_with_passive_waiting_from_the_plans_token_counter():
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "passive"]


def test_importing_the_package_chooses_passive_waiting_and_keeps_a_users_choice():
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    code = "import os, bineval_dspy; print(os.environ.get('OMP_WAIT_POLICY'))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout.strip() == "passive"
    mine = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, "OMP_WAIT_POLICY": "active"}, timeout=120)
    assert mine.stdout.strip() == "active"
