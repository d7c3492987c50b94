"""The use cases: what each command does, as functions of a loaded config (the CLI is a thin layer over
them, and so is the Python API in zotsync/__init__.py). One module per use case or family:

- pull.py: `pull` (a source into the store, the safety valve) and `run_pull`;
- sync.py: `run_sync`, the pull, the processors and every export; changes.py: CHANGES.md;
- page.py: the page of the catalogue and the store, as the exporters need it; export's `render`;
- status.py: `status`; edit.py: `pin`, `adopt`; listing.py: `list`; search.py: `search`;
- enrich.py: `enrich`; frame.py: `catalogue_frame` (pandas); snapshot.py; init.py;
- schedule.py: `schedule install|show|remove|github`; stores.py: the configured store, opened
  (`store.lifecycle`).

cli.py imports each inside the command that runs it, so `zotsync --help` starts without the store.
"""
