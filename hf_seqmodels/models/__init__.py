"""The remote-code bundle: every file here imports only its siblings, torch and transformers."""
