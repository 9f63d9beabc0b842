"""What a computation leaves behind, as values: a protocol and estimates (``values``), a
learned policy (``policy``), one dataset's results (``dataset``) and a suite's (``suite``).
Built once by tuning and only read afterwards; loading one computes nothing.

May import: ``core``, ``fusion.config`` (a configuration is a value results hold).
"""
