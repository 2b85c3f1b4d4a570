"""What a verification record is made of, shared by its reader (``verify.record``) and its
schema (``verify.record_schema``), so that neither imports the other: the format's version,
the link classes of a topology (fastest to slowest), and the largest plausible busbw."""

SCHEMA = 2
LINK_CLASSES = ("nvlink", "pcie-switch", "host-bridge", "cross-cpu")  # fastest to slowest
# Case 11 of site.md: an all-reduce busbw above this on current hardware (NVLink 5 is 900 GB/s
# per direction) means the timing missed a synchronize, not a fast machine.
BUSBW_PLAUSIBLE_MAX_GB_PER_S = 1000.0
