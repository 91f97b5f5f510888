"""The approval console: a Streamlit app where reviewers decide proposals and auditors read the ledger.

Run it with ``amem ui`` (the entry script is app.py beside this file). The pages call the Memory
facade and amem.services (governance, audit, accounts) only: no SQL and no policy logic here, so
every rule the console shows is one the service enforces.
"""
