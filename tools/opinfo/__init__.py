"""The OpInfo sweep: torch's own operator catalog (``op_db``) compiled with ``fullgraph=True``
under bytegraph or torch.compile and judged against eager (``python -m tools.opinfo``,
``make opinfo``; the quick tier's slice is ``tests/test_opinfo.py``)."""
