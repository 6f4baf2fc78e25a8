"""Questions with a known first source over the bundled ICML 2026 corpus (concurrency test and benchmark)."""

# (question, paper its first source must be)
QUESTIONS = [
    ("Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?",
     "000_12a0d7b1c5c902c5#13"),
    ("What is SyPE?", "000_12a0d7b1c5c902c5#15"),
    ("Which paper audits reward models with a Reward Auditor?", "000_12a0d7b1c5c902c5#1"),
    ("What is OmniMoE?", "000_12a0d7b1c5c902c5#13"),
]
