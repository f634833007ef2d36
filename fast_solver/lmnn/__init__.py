"""LMNN with a certified stop (eq. 14; ``solver``, its tuned values in ``options``), multi-metric LMNN (sec. 5.2; ``multi_metric``),
multi-pass LMNN (``multipass``), a path over ``mu`` (``path``) and energy-based classification
(sec. 6.2; ``energy``, ``energy_classifier``), with their estimators."""
