"""The approval console: a Streamlit app where reviewers decide proposals and auditors read the ledger.

Run it with ``amem ui``. The pages call the Memory facade and amem.services (governance, audit,
accounts) only: no SQL and no policy logic here, so every rule the console shows is one the
service enforces.
"""

from pathlib import Path

#: The entry script for ``streamlit run``.
APP_PATH = Path(__file__).resolve().parent / "app.py"
