"""Change detection's Spanish rules (issue 38), kept apart from the English and Chinese ones in changes.py."""

from __future__ import annotations

import re

PRESENT_ES = re.compile(
    r"\b(?:ahora|actualmente|hoy\s+en\s+d[íi]a|todav[íi]a|a[úu]n|estos\s+d[íi]as|en\s+este\s+momento)\b",
    re.IGNORECASE,
)
PAST_ES = re.compile(
    r"\b(?:antes|sol[íi]a|sol[íi]amos|anteriormente|al\s+principio|en\s+el\s+pasado|primero)\b", re.IGNORECASE
)
# "(Ya no / Ahora / Por cierto,) uso …", "Me mudé …", "Yo …": the speaker, in the verb's first person.
ES_FIRST_PERSON = re.compile(
    r"^(?:(?:bueno|pues|oye|por\s+cierto|ahora|ya|ya\s+no|no|también|tambien|todavía|todavia|hoy|ayer|"
    r"(?:la|el)\s+(?:semana|mes|año)\s+pasad[oa]|desde\s+hace\s+\w+\s+\w+)[,\s]+)*"
    r"(?:yo|nosotros|nosotras|(?:me|nos)\s+\w+|uso|usamos|vivo|vivimos|trabajo|trabajamos|prefiero|como|bebo|"
    r"conduzco|soy|somos|estoy|estamos|tengo|tenemos|juego|estudio|voy|hago|dejé|deje|cambié|cambie|empecé|empece|"
    r"compré|compre|vendí|vendi|renuncié|renuncie|tomo|leo|escucho|practico|hice|fui|estuve|tuve)\b",
    re.IGNORECASE,
)
# Spanish function words and the cues' own words say nothing of a topic (changes.py adds them to its own).
NOT_TOPIC_ES = frozenset(
    """
    que con por para los las una unos unas del pero como más mas muy ahora antes ya yo nosotros mis tus sus
    este esta estos estas eso esto ese esa desde hace nunca dejé deje cambié cambie mudé mude lugar vez
    también tambien todavía todavia semana mes año pasado pasada
    """.split()
)

# Spanish words of the same topics (issue 38's Spanish rules), by their first five letters like the English ones.
TOPICS_ES: dict[str, tuple[str, ...]] = {
    "home": ("vivo", "vivim", "vivir", "vive", "mudé", "mude", "mudam", "mudar", "casa", "piso", "ciuda"),
    "work": ("traba", "emple", "empre", "ofici", "jefe", "renun", "puest"),
    "tools": ("uso", "usamo", "usar", "edito", "progr"),
    "diet": ("como", "comer", "carne", "vegan", "veget", "comid", "pesca"),
    "drink": ("bebo", "beber", "café", "cafe", "cerve", "vino"),
    "transport": ("coche", "condu", "moto", "bici", "autob"),
    "partner": ("novia", "novio", "espos", "marid", "parej", "casé", "divor"),
    "study": ("estud", "unive", "carre", "curso"),
    "habit": ("fumar", "fumo", "gimna", "corro", "juego", "jugar"),
}


def es_first(text: str) -> bool:
    """A Spanish statement in the first person (issue 38's Spanish rules)."""
    return ES_FIRST_PERSON.match(text) is not None
