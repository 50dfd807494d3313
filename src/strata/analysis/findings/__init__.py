"""The seed studies' claims, each a check over the user's results (the measurements alone), with a verdict
decided only by an interval that decides it."""
