"""Tools beside the measurements: preparing a lent GPU machine, the GPU checks, the public scripts
of user communities run against the drop-ins."""
