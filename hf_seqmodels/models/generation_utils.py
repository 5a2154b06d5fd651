"""The ``generate()`` of every generating class: our decoding loop (``decoding.py``), as a saved folder runs it.

A folder saved by ``save_pretrained`` carries the loop once, as ``custom_generate/generate.py`` (a copy of
``decoding.py``), and transformers makes that file's ``generate`` the ``generate`` of every model it loads from the
folder with ``trust_remote_code=True``. `SeqModelsGenerationMixin` gives the package's own classes the same
``generate``: ``decoding.generate``, which runs transformers' ``generate()`` with our loop as its decoding method
where the loop returns what GenerationMixin's own would, and GenerationMixin's own decoding methods for the rest
(see ``decoding.generate``). Both ways decode with the same code.

The loop is imported by name, not by a ``from .decoding import`` line: transformers copies every module that a
modeling file imports that way into the saved folder's root, which would carry the loop twice. In the code of a saved
folder (no ``decoding.py`` beside this file) the class falls back to GenerationMixin's ``generate``; a model loaded
from the folder with ``trust_remote_code=True`` has the folder's loop bound as its own ``generate`` instead.
"""

import importlib

from transformers import GenerationMixin

try:
    decoding = importlib.import_module(".decoding", __package__)
except ModuleNotFoundError as error:  # the code of a saved folder, which holds the loop in custom_generate/
    if error.name != f"{__package__}.decoding":
        raise
    decoding = None


class SeqModelsGenerationMixin(GenerationMixin):
    """GenerationMixin, whose ``generate`` runs our decoding loop: put it where ``GenerationMixin`` goes in the bases
    of a class that generates."""

    def generate(self, *args, **kwargs):
        """transformers' ``generate()`` with our decoding loop (``decoding.generate``): the same arguments and the
        same results as GenerationMixin's, with the rows of finished sentences dropped. ``custom_generate=None``
        asks for GenerationMixin's own decoding methods."""
        if decoding is None:
            return super().generate(*args, **kwargs)
        return decoding.generate(*args, model=self, **kwargs)
