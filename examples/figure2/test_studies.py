#!/usr/bin/python3
"""Checks of studies.py's measures against values worked out by hand (no model training, no
clp-transfer): bits per byte, the bytes a token stands for, the byte slice, the --tokens file,
extend-random's rows and the undertrained rule. Run: /usr/bin/python3 examples/figure2/test_studies.py
"""

import math
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import studies  # noqa: E402

tinygpt = studies.tinygpt


class FixedDistribution(torch.nn.Module):
    """A model whose next-token distribution is `probabilities` whatever the context."""

    def __init__(self, probabilities, n_positions):
        super().__init__()
        self.config = dict(n_positions=n_positions)
        self.logits = torch.nn.Parameter(torch.tensor(probabilities, dtype=torch.float64).log())

    def forward(self, idx):
        return self.logits.expand(idx.shape[0], idx.shape[1], -1)


class BitsPerByte(unittest.TestCase):
    def test_windows_predict_all_but_each_first_token(self):
        # block 4, ids 0..9: windows [0 1 2 3] [4 5 6 7] [8 9]; predicted 1 2 3 5 6 7 9
        lengths = [10 ** i for i in range(10)]
        count, n_bytes = studies.predicted_tokens(list(range(10)), lengths, block=4)
        self.assertEqual(count, 7)
        self.assertEqual(n_bytes, 10 + 100 + 1000 + 100000 + 1000000 + 10000000 + 1000000000)

    def test_a_last_window_of_one_token_is_dropped(self):
        self.assertEqual(studies.predicted_tokens([0, 1, 2, 3, 4], [1, 2, 3, 4, 5], block=4), (3, 9))

    def test_fixed_distribution_by_hand(self):
        # P = 1/2, 1/4, 1/8, 1/8 for ids 0..3: -log2 P = 1, 2, 3, 3 bits; bytes 5, 1, 2, 7.
        model = FixedDistribution([0.5, 0.25, 0.125, 0.125], n_positions=3)
        ids = [0, 1, 2, 3, 0, 2, 3]  # windows [0 1 2] [3 0 2] [3]: predicted 1 2 0 2
        count, n_bytes = studies.predicted_tokens(ids, [5, 1, 2, 7], block=3)
        self.assertEqual((count, n_bytes), (4, 1 + 2 + 5 + 2))
        piece = dict(ids=ids, count=count, bytes=n_bytes)
        self.assertAlmostEqual(studies.slice_bits_per_byte(model, piece), (2 + 3 + 1 + 3) / 10, places=12)

    def test_from_perplexity_equals_direct(self):
        model = FixedDistribution([0.7, 0.2, 0.1], n_positions=4)
        ids = [0, 1, 2, 0, 0, 1, 0, 2, 1]
        count, n_bytes = studies.predicted_tokens(ids, [3, 1, 2], block=4)
        ppl = tinygpt.perplexity(model, ids)
        direct = studies.slice_bits_per_byte(model, dict(ids=ids, count=count, bytes=n_bytes))
        self.assertAlmostEqual(studies.bits_per_byte(math.log(ppl), count, n_bytes), direct, places=12)
        bits = -sum(math.log2([0.7, 0.2, 0.1][i]) for i in [1, 2, 0, 1, 0, 2])  # predicted: 1 2 0 | 1 0 2
        self.assertAlmostEqual(direct, bits / (1 + 2 + 3 + 1 + 3 + 2), places=12)


class Tokens(unittest.TestCase):
    def test_byte_lengths_of_byte_level_and_special_tokens(self):
        tok = tinygpt.Tokenizer.from_vocab({"Ġder": 0, "Ã¤": 1, "a": 2, tinygpt.EOS: 3}, [])
        self.assertEqual(studies.token_byte_lengths(tok), [4, 2, 1, 13])

    def test_byte_slice_keeps_whole_characters(self):
        self.assertEqual(studies.byte_slice("äöü", 3), "ä")
        self.assertEqual(studies.byte_slice("äöü", 4), "äö")
        self.assertEqual(studies.byte_slice("abc", 10), "abc")

    def test_token_list_holds_each_tokens_bytes_a_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tokens.txt")
            studies.write_token_list(path, ["Ġder", "Ã¤", "ĠÃ"])
            with open(path, "rb") as f:
                self.assertEqual(f.read(), b" der\n\xc3\xa4\n \xc3\n")
            with self.assertRaises(ValueError):
                studies.write_token_list(path, ["ĊĊ"])

    def test_tokens_per_word(self):
        tok = tinygpt.Tokenizer.from_vocab({c: i for i, c in enumerate(tinygpt.BASE_ALPHABET)}, [])
        # no merges: one token a byte; "ab cd" + EOS read as a blank: 'a' 'b' 'Ġ' 'c' 'd' 'Ċ' over 2 words
        self.assertEqual(studies.tokens_per_word(tok, "ab cd" + tinygpt.EOS), 3.0)


class RandomRows(unittest.TestCase):
    def test_new_rows_drawn_old_rows_kept_seeded(self):
        config = tinygpt.make_config(50, 8, 1, 1, 16, 49)
        torch.manual_seed(0)
        model = tinygpt.GPT(config)
        before = model.transformer.wte.weight.detach().clone()
        studies.randomise_rows(model, [47, 48], seed=3)
        after = model.transformer.wte.weight.detach()
        self.assertTrue(torch.equal(after[:47], before[:47]))
        self.assertTrue(torch.equal(after[49], before[49]))
        self.assertFalse(torch.equal(after[47:49], before[47:49]))
        old = torch.cat([before[:47], before[49:]]).double()
        g = torch.Generator().manual_seed(studies.RANDOM_ROWS_SEED + 3)
        draws = torch.randn(2, 8, generator=g)
        expected = old.mean(0) + old.std(0) * draws.double()
        self.assertTrue(torch.allclose(after[47:49].double(), expected, atol=1e-6))


class Rule(unittest.TestCase):
    def test_loses_only_when_the_interval_is_above_zero(self):
        self.assertTrue(studies.loses([1.0, 1.2, 0.9, 1.1]))
        self.assertFalse(studies.loses([1.0, -1.2, 0.9, 1.1]))
        self.assertFalse(studies.loses([-1.0, -1.2, -0.9]))
        self.assertIsNone(studies.loses([1.0]))

    def test_verdict(self):
        better = dict(better=True)
        self.assertIn("**synthesise**", studies.verdict_lines({"shipped": False, "planted": False}, better, {})[1])
        self.assertIn("**keep**", studies.verdict_lines({"shipped": False, "planted": True}, better, {})[1])
        worse = dict(better=False)
        self.assertIn("**keep**", studies.verdict_lines({"shipped": False, "planted": False}, worse, {})[1])
        self.assertIn("Not decided", studies.verdict_lines({"shipped": False, "planted": None}, better, {})[1])
        self.assertIn("Provisional", "".join(studies.verdict_lines({"shipped": False, "planted": False}, better,
                                                                   {"planted": [0, 1]})))


if __name__ == "__main__":
    unittest.main()
