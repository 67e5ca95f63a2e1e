"""Developer tools of the FaultSense repository (not part of the installed package)."""
