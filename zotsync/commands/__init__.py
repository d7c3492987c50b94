"""Use cases behind the commands, one module per family (init, listing, status, …). cli.py imports them
lazily, inside the command that needs them, so `zotsync --help` starts without pandas or pyzotero."""
