"""What both sides use and neither decides: settings, records, problems, loading, timers, memory."""
