"""The hardware floor: the GPU catalogue (``gpus``), a cluster's links (``links``) and the measured
kernel efficiencies by operation class (``calibration``). Data with sources; serving and training
both stand on it, and it imports only ``core``."""
