"""Where a biLM comes from: the one resolver, downloads, the Hub, archives, the shipped biLMs."""
