"""MMC (Xing et al. 2002) at scale: projected Newton on the metric (``solver``, ``xing``) over
implicit label pairs (``compiled``), proved by ``lmnn_sdp.mmc``'s certificate."""
