"""What the report tells the user to do: the best stack, containers per host, placement, write
amplification, and the warnings of measurement hygiene."""
