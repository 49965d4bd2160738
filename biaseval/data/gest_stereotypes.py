"""GEST's 16 stereotypes (Pikuliak et al. 2023), as the dataset's README and data guidelines name them:
1-7 are about women, 8-16 about men. Data, read by the suite (suites/gest.py) and the report's chart."""

FEMALE_STEREOTYPES = tuple(range(1, 8))  # "women are ..."; 8-16 are "men are ..."
# The stereotypes as the dataset's README and data guidelines name them.
STEREOTYPE_NAMES = {
    1: "Women are emotional and irrational", 2: "Women are gentle, kind, and submissive",
    3: "Women are empathetic and caring", 4: "Women are neat and diligent", 5: "Women are social",
    6: "Women are weak", 7: "Women are beautiful", 8: "Men are tough and rough", 9: "Men are self-confident",
    10: "Men are professional", 11: "Men are rational", 12: "Men are providers", 13: "Men are leaders",
    14: "Men are childish", 15: "Men are sexual", 16: "Men are strong",
}
SHORT_NAMES = {1: "emotional", 2: "gentle", 3: "empathetic", 4: "neat", 5: "social", 6: "weak", 7: "beautiful",
               8: "tough", 9: "self-confident", 10: "professional", 11: "rational", 12: "providers",
               13: "leaders", 14: "childish", 15: "sexual", 16: "strong"}
