"""The name under which transformers passes the decoding cache: ``past_key_values`` up to 5.23, ``cache`` from 5.24.

``generate()`` hands the cache to ``forward`` under that name and reads it back from the output under that name,
and transformers' output classes declare a field of that name. Our models take the cache under either name (code
written for either version keeps working) and return it under the installed version's name, decided here at import
time, so that a folder saved for ``trust_remote_code`` works whichever version loads it.
"""

import warnings

from transformers.modeling_outputs import CausalLMOutputWithPast

CACHE_NAME = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def cache_argument(cache, past_key_values):
    """The cache a caller passed, as ``cache`` or as ``past_key_values`` (with transformers' deprecation warning
    where the installed version has renamed it)."""
    if past_key_values is None:
        return cache
    if cache is not None:
        raise TypeError("Pass the cache once: as `cache` or as `past_key_values`, not both.")
    if CACHE_NAME == "cache":
        warnings.warn("`past_key_values` is deprecated since transformers 5.24: pass the cache as `cache`.",
                      FutureWarning, stacklevel=3)
    return past_key_values


def cache_field(cache) -> dict:
    """``{name: cache}`` under the installed transformers' name, for an output class's keyword arguments."""
    return {CACHE_NAME: cache}


def output_cache(output):
    """The cache an output carries (``output.cache`` or ``output.past_key_values``, whichever this version has)."""
    return getattr(output, CACHE_NAME)
