"""``judge --batch``: a run's LM calls sent through an OpenAI-style batch API (``/v1/files`` + ``/v1/batches``),
which bills about half and answers within a day, for large offline runs.

Why it is built this way:

- The judge is not rewritten for batches. It runs over the rows with ``BatchEngine`` as its LM's engine: a
  request whose reply is known is answered, any other is recorded and fails (a verdict of that pass is thrown
  away). The recorded requests, exactly as the normal path would send them (lm15's wire body for the same
  server), go up as a JSONL batch; once it is done its replies are known and the judge runs again. Requests that
  depend on a reply (the explanation of a "no" under ``--explanations failures``) are recorded on that pass and
  go in a later batch. The last pass writes the rows through the normal judge path, so resume, fingerprints and
  exit codes behave as without ``--batch``; a request whose reply is missing or failed fails that call, and the
  verdict is unanswered, never a yes.
- A request's key (its ``custom_id``) is a hash of its wire body and DSPy's ``rollout_id``: the k samples of a
  vote are k requests, and a request asked twice is sent once.
- A submitted batch is recorded in ``OUT.batch.json`` (``BatchState``) before anything waits for it, so a run
  interrupted after submission resumes polling the same batch instead of paying for a second one. A batch
  collected by an earlier run lends its answered replies again; its failed requests are sent anew (a rerun
  retries, as without ``--batch``).
- The LM's model string gains ``prices.BATCH_SUFFIX``: replies are priced at batch rates (or unknown), and every
  verdict names how it was answered. DSPy's cache is off for it: the batches are the record (a rerun downloads
  the replies again), and a reply answered on a recording pass would otherwise be a free cache hit on the last
  pass, whose rows would then show none of the tokens the batch billed.
"""

from bineval_dspy.lm.batches.engine import BatchEngine, batch_lm
from bineval_dspy.lm.batches.run import collect_replies
from bineval_dspy.lm.batches.state import BatchState, state_path
from bineval_dspy.lm.batches.target import OPENAI_BASE, BatchTarget, batch_plan, batch_target

__all__ = ["OPENAI_BASE", "BatchEngine", "BatchState", "BatchTarget", "batch_lm", "batch_plan", "batch_target", "collect_replies", "state_path"]
