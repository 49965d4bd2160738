"""WinoMT corpora labelled in worker processes (biaseval.label.workers) give what labelling in this
process gives, in the jobs' order, and their errors come back as the same exceptions."""

from __future__ import annotations

import pickle

import polars as pl
import pytest

from biaseval.label.analysers import SpanError
from biaseval.label.entities import DETECTORS, label_languages
from biaseval.label.workers import share_out

SENTENCES = {  # English source, entity index, occupation -> Spanish and French translations
    ("The developer argued with the designer because she did not like the design.", 1, "developer"):
        ("La desarrolladora discutió con el diseñador porque no le gustó el diseño.",
         "La développeuse s'est disputée avec le designer parce qu'elle n'aimait pas le design."),
    ("The nurse helped the mechanic because he was tired.", 4, "mechanic"):
        ("La enfermera ayudó al mecánico porque estaba cansado.",
         "L'infirmière a aidé le mécanicien parce qu'il était fatigué."),
    ("The lawyer paid the baker because she owed him money.", 1, "lawyer"):
        ("La abogada le pagó al panadero porque le debía dinero.",
         "L'avocate a payé le boulanger parce qu'elle lui devait de l'argent."),
    ("The cook thanked the secretary for his help.", 4, "secretary"):
        ("El cocinero agradeció al secretario por su ayuda.",
         "Le cuisinier a remercié le secrétaire pour son aide."),
}


def _frame(lang: str, copies: int) -> pl.DataFrame:
    """Rows as scoring hands them over: several systems with the same sources (so rows repeat what
    labelling reads), a column labelling does not read, a row without a translation."""
    rows = [{"system": f"system-{k % 3}", "tgt_lang": lang, "source": source,
             "translation": translation[lang == "fr"] + " " * (k // 3), "entity_index": index,
             "occupation": occupation, "item_id": f"{lang}/{k}/{index}"}
            for k in range(copies) for (source, index, occupation), translation in SENTENCES.items()]
    rows[1]["translation"] = None
    return pl.DataFrame(rows)


def test_jobs_are_shared_out_largest_first_to_the_least_loaded_worker():
    # 9 -> worker 0; 7 -> worker 1; 5 -> worker 1 (7 < 9); 1 -> worker 0 (9 < 12)
    assert share_out([5, 9, 1, 7], 2) == [[1, 2], [3, 0]]
    assert share_out([3, 3, 3], 2) == [[0, 2], [1]]
    assert share_out([4], 3) == [[0]]
    assert share_out([], 2) == []


@pytest.mark.slow
def test_worker_processes_label_as_this_process_does(data_dir):
    detector = DETECTORS[0]
    jobs = [(detector, _frame("es", 30)), (detector, _frame("fr", 40)), (detector, _frame("es", 5))]
    here = label_languages(jobs, processes=False)
    there = label_languages(jobs, processes=True)
    assert [frame.height for frame in there] == [120, 160, 20]
    for (_, frame), mine, theirs in zip(jobs, here, there):
        assert theirs.equals(mine)
        assert theirs.columns == frame.columns + ["label", "reason", "evidence"]
    assert there[0]["label"][1] is None and there[0]["label"].null_count() == 1
    labels = dict(zip(there[1]["occupation"], there[1]["label"]))  # the aligner and analyser did run
    assert labels["developer"] == "female" and labels["secretary"] == "male"


@pytest.mark.slow
def test_an_error_in_a_worker_is_raised_here():
    detector = DETECTORS[0]
    broken = _frame("es", 2).drop("entity_index")
    with pytest.raises(ValueError, match="entity-alignment: rows lack entity_index"):
        label_languages([(detector, _frame("es", 2)), (detector, broken)], processes=True)


def test_span_errors_survive_pickling():
    error = pickle.loads(pickle.dumps(SpanError("2 of 2 rows have an entity span outside", [0, 1])))
    assert isinstance(error, SpanError) and error.rows == [0, 1] and "outside" in str(error)
