"""Stored results as cells (the repetitions of one configuration): loading, selecting, the raw baseline, the
noise within and between trials, and what the collectors say a trial used."""
