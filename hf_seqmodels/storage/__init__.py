"""Folder safety: folders replaced whole with manifests of what a run wrote (`atomic_folders`), what an older
version wrote known by content (`earlier_runs`), and strict loading of a saved model (`safe_loading`)."""
