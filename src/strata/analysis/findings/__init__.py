"""The seed studies' claims, each a check over the user's results, with the study's own sentence
(quotes.yaml) and a verdict decided only by an interval that decides it."""
