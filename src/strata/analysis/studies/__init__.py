"""The seed studies as strata reproduces them: every sentence quoted of them (quotes.yaml), their published
numbers (paper.yaml) beside the user's, those numbers as a result set the findings judge, and what each study
measures and how it differs here (studies.yaml)."""
