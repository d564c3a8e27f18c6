"""What every source's configuration shares: option types, validation problems, value parsers, and the connectivity
check's child process. Each source's own properties live in its package (`connectors.<source>.config`)."""
