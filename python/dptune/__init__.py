"""dptune from Python: differentially private hyperparameter tuning.

* :mod:`dptune.accounting`: privacy events and accountants in dp_accounting's vocabulary
  (``RdpAccountant``, ``PLDAccountant``, ``compose(event, count)``, ``get_epsilon(delta)``),
  noise calibration, and Opacus-style ``get_noise_multiplier`` / ``get_epsilon``.
* :mod:`dptune.tuners`: private tuners (naive, random and grid search, Liu–Talwar,
  Papernot–Steinke) with their guarantee before any run, driven as an ask/tell loop.
* :mod:`dptune.results`: a results folder's parquet tables as pandas or polars frames.

The numbers come from the Rust library ``dptune`` (the extension module ``dptune._dptune``).
"""

from . import _dptune
from . import accounting, results, tuners

__version__: str = _dptune.__version__
__all__ = ["accounting", "tuners", "results", "__version__"]
