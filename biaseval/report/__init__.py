"""Reports of a run: ``report.md`` (``markdown``), the self-contained ``report.html`` (``html``),
figures (``plots``) and the published values a run is compared with (``published``). Reads what
``metrics`` computed; computes nothing that changes a number.
"""
