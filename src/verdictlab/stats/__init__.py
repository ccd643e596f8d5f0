"""Statistics over judgments: pure functions, arrays/DataFrames in, numbers/frozen dataclasses out.

Normative definitions: DESIGN.md "Reliability figures".  Undefined figures are NaN (or the value of
a ``zero_division`` keyword), never a silent 0; every figure comes with the N it stands on.

* :func:`reliability` -- C, phi, A, A_dec, A_max, T, T_joint per cell, with intervals.
* :func:`agreement_by_cell` -- exact match, kappa, alpha, kappa deflation, position/verbosity bias,
  test-retest and the consistency-bias paradox flag per cell (same cells as :func:`reliability`).
"""

from .agreement import (
    Alpha,
    DisagreementCounts,
    ExactMatch,
    Kappa,
    KappaDeflation,
    cohen_kappa,
    disagreement_counts,
    exact_match,
    kappa_deflation,
    krippendorff_alpha,
    test_retest,
)
from .bias import (
    Correlation,
    PositionBias,
    consistency_bias_paradox,
    position_bias,
    shown_first_won_from_verdicts,
    verbosity_bias,
)
from .by_cell import AGREEMENT_COLUMNS, MODAL_COLUMNS, agreement_by_cell, modal_verdicts
from .calibration import Calibration, CalibrationBin, Recalibration, calibration, recalibrate
from .classes import CLASS_COLUMNS, class_figures, macro_f1_score, per_class_scores
from .compare import paired_mcnemar
from .drift import ControlChart, drift_pair, drift_series, equivalence_decision, ranking_change
from .intervals import Interval, bootstrap_interval, wilson_interval
from .jury import (
    JuryCorrelation,
    effective_jurors,
    jury_error_correlation,
    jury_majority_accuracy,
    jury_majority_accuracy_heterogeneous,
    observed_majority_accuracy,
)
from .ppi import LabelBudget, MeanEstimate, classical_mean, judge_mean, label_budget, ppi_mean
from .regions import REGIONS, best_in_group, failure_region, format_dispersion, rank_shifts, region_thresholds
from .reliability import RELIABILITY_COLUMNS, accuracy_ceiling, reliability, trust_rate
from .repeats import REPEAT_COLUMNS, repeat_consistency
from .selective import SelectiveResult, selective_threshold
from .selfpref import SelfPreference, newcombe_difference, self_preference, two_proportion_test
from .significance import McNemar, holm_adjust, kendall, mcnemar_exact, spearman
from .stability import AnchoringShift, anchoring_shift, change_vs_noise
from .transitivity import TransitivityResult, bradley_terry, kendall_vs_reference, pair_outcomes
from .variance import anova_eta_squared, g_study, g_study_verdicts

__all__ = [
    "AnchoringShift",
    "ControlChart",
    "SelfPreference",
    "TransitivityResult",
    "anchoring_shift",
    "bradley_terry",
    "change_vs_noise",
    "drift_pair",
    "drift_series",
    "effective_jurors",
    "equivalence_decision",
    "kendall_vs_reference",
    "newcombe_difference",
    "pair_outcomes",
    "ranking_change",
    "self_preference",
    "two_proportion_test",
    "Calibration",
    "CalibrationBin",
    "Recalibration",
    "calibration",
    "recalibrate",
    "LabelBudget",
    "MeanEstimate",
    "classical_mean",
    "judge_mean",
    "label_budget",
    "ppi_mean",
    "SelectiveResult",
    "selective_threshold",
    "AGREEMENT_COLUMNS",
    "CLASS_COLUMNS",
    "Alpha",
    "Correlation",
    "DisagreementCounts",
    "ExactMatch",
    "Interval",
    "JuryCorrelation",
    "Kappa",
    "KappaDeflation",
    "McNemar",
    "PositionBias",
    "REGIONS",
    "REPEAT_COLUMNS",
    "RELIABILITY_COLUMNS",
    "accuracy_ceiling",
    "agreement_by_cell",
    "best_in_group",
    "modal_verdicts",
    "region_thresholds",
    "MODAL_COLUMNS",
    "anova_eta_squared",
    "bootstrap_interval",
    "class_figures",
    "cohen_kappa",
    "consistency_bias_paradox",
    "disagreement_counts",
    "exact_match",
    "failure_region",
    "format_dispersion",
    "g_study",
    "g_study_verdicts",
    "holm_adjust",
    "jury_error_correlation",
    "jury_majority_accuracy",
    "jury_majority_accuracy_heterogeneous",
    "kappa_deflation",
    "kendall",
    "macro_f1_score",
    "krippendorff_alpha",
    "mcnemar_exact",
    "observed_majority_accuracy",
    "paired_mcnemar",
    "per_class_scores",
    "position_bias",
    "rank_shifts",
    "reliability",
    "repeat_consistency",
    "shown_first_won_from_verdicts",
    "spearman",
    "test_retest",
    "trust_rate",
    "verbosity_bias",
    "wilson_interval",
]
