"""Characters no font shows: the memory defense (defense/view.py) drops them before its rules read text, and the
fence (block/fence.py) strips them from memory text in a block."""

from __future__ import annotations

# Default_Ignorable_Code_Point's explicit part (PropList.txt: Other_Default_Ignorable_Code_Point; the rest of the
# property is category Cf and the variation selectors, which the readers of these ranges catch by category) and
# the blank braille pattern U+2800, which renders as a space but is a symbol.
INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
