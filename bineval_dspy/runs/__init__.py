"""A run as one object: its settings (``spec.RunSpec``, the base of every run config; ``spec.UnitRunSpec``, a run done unit by unit), its header beside the records it streams (``header``), the
protocol every resumable command implements (``protocol.Run``) and the one loop that executes it (``execute``)."""
