"""Running an experiment on this host: the run loop over interleaved rounds (runner), the repetitions and
when `auto` stops (repeat, scaling), one trial from stack to stored result (trial), the progress line
(progress), and what this host can build (doctor). Above the results it writes and the analysis `auto`
asks; below the hosts (whose agents run trials) and the CLI."""
