"""Collections and suites of them: a BEIR folder or ``irds:`` id as a :class:`Dataset`
(``datasets``), named suites (``suites``), and a team's own corpus and queries turned into a
BEIR folder (``ingest``).

May import: ``core``.
"""
