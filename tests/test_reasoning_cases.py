"""The spec's golden table (reasoning.md), shared by the golden and equivalence tests (holds no tests)."""

from __future__ import annotations

# (logic, premise 1, premise 2, [(statement, f, c), ...] that must all be among the conclusions)
GOLDEN: list[tuple[str, str, str, list[tuple[str, float, float]]]] = [
    ("nal", "(--> sam human) (stv 1 0.9)", "(--> human mortal) (stv 1 0.9)",
     [("(--> sam mortal)", 1.0, 0.81), ("(--> mortal sam)", 1.0, 0.447514)]),
    ("nal", "(--> (× sam garfield) friend) (stv 1 0.9)", "(--> garfield animal) (stv 1 0.9)",
     [("(--> (× sam animal) friend)", 1.0, 0.447514)]),
    ("nal", "(==> (--> (× $1 elephant) eat) (--> $1 ([] dangerous))) (stv 1 0.9)",
     "(--> (× tiger elephant) eat) (stv 1 0.9)", [("(--> tiger ([] dangerous))", 1.0, 0.81)]),
    ("nal", "(--> golden_retriever friendly) (stv 1 0.9)", "(--> friendly family_friendly) (stv 0.9 0.85)",
     [("(--> golden_retriever family_friendly)", 0.9, 0.6885),
      ("(--> family_friendly golden_retriever)", 1.0, 0.407758)]),
    ("nal", "(==> rained wetGrass) (stv 1 0.9)", "wetGrass (stv 1 0.9)", [("rained", 1.0, 0.447514)]),
    ("nal", "(--> wolf animal) (stv 1 0.45)", "(--> wolf animal) (stv 1 0.45)", [("(--> wolf animal)", 1.0, 0.620690)]),
    ("nal", "(--> wolf animal) (stv 1 0.620690)", "(--> wolf animal) (stv 1 0.45)",
     [("(--> wolf animal)", 1.0, 0.710526)]),
    ("nal", "(--> cat x) (stv 0.2 0.8)", "(--> cat x) (stv 0.9 0.5)", [("(--> cat x)", 0.34, 0.833333)]),
    ("nal", "(<-> gr poodle) (stv 0.25 0.4)", "(--> poodle smart) (stv 1 0.9)", [("(--> gr smart)", 0.25, 0.09)]),
    ("nal", "(==> a b) (stv 1 0.9)", "(==> b c) (stv 1 0.9)", [("(==> a c)", 1.0, 0.81)]),
    ("nal", "(--> x y) (stv 1 0.729)", "(--> y z) (stv 1 0.9)", [("(--> x z)", 1.0, 0.6561)]),
    ("pln", "(Implication (Inheritance $1 (IntSet Feathered)) (Inheritance $1 Bird)) (stv 1 0.9)",
     "(Inheritance Pingu (IntSet Feathered)) (stv 1 0.9)", [("(Inheritance Pingu Bird)", 1.0, 0.81)]),
    ("pln", "(Inheritance a b) (stv 1 0.9)", "(Inheritance b c) (stv 1 0.9)", [("(Inheritance a c)", 1.0, 0.81)]),
    ("pln", "(Inheritance c a) (stv 0.9 0.9)", "(Inheritance c b) (stv 0.8 0.9)",
     [("(Inheritance a b)", 0.722222, 0.393204), ("(Inheritance b a)", 0.722222, 0.421631)]),
    ("pln", "(Similarity a b) (stv 0.8 0.9)", "(Similarity b c) (stv 0.8 0.9)",
     [("(Similarity a c)", 0.654938, 0.7776)]),
    ("pln", "(Member x b) (stv 1 0.9)", "(Inheritance b c) (stv 0.9 0.9)", [("(Member x c)", 0.9, 0.729)]),
    ("pln", "(Evaluation p q) (stv 0.9 0.9)", "(Implication p r) (stv 0.9 0.9)",
     [("(Evaluation r q)", 0.811111, 0.6561)]),
]

# Cases whose whole conclusion set the spec gives (nothing else may come out).
EXACT = {0, 1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 14, 15, 16}
