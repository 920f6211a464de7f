"""`heym up`: the single-machine dev stack (embedded NATS and Postgres, five service processes)."""
