import { api, bankPath } from "../api.js";
import { empty, field, h, link, route, section, svg, table, truncate, typeBadge, when } from "../dom.js";

export async function entitiesView({ bank, query, navigate }) {
  const search = query.get("search") || "";
  const items = await api("GET", bankPath(bank, "entities"), { query: { search: search || null, limit: 100 } });
  const input = h("input", { type: "search", name: "search", value: search, placeholder: "a name or an alias" });
  const form = h("form", { class: "filters", role: "search" }, field("Find an entity", input),
    h("div", { class: "field actions" }, h("button", { type: "submit" }, "Find")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    navigate(route("b", bank, "entities", { search: input.value.trim() }));
  });
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Entities"), h("p", { class: "muted" }, "People, places and things the memories mention, most mentioned first.")),
    form,
    items.length
      ? table(["Entity", "Also called", "Mentions", "Last seen"], items.map((e) => h("tr", { "data-id": e.id },
          h("td", {}, link(route("b", bank, "e", e.id), e.name)),
          h("td", {}, e.aliases.length ? e.aliases.map((a) => h("span", { class: "tag" }, a)) : h("span", { class: "muted" }, "—")),
          h("td", { class: "num" }, e.mentions),
          h("td", {}, when(e.last_seen)))))
      : empty(search ? "No entity matches." : "No entity yet."));
}

export async function entityView({ bank, params }) {
  const graph = await api("GET", bankPath(bank, "entities", params[1], "graph"));
  const e = graph.entity;
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", { dir: "auto" }, e.name), link(route("b", bank, "entities"), "← all entities")),
    h("p", { class: "muted" }, `${e.mentions} mentions`, e.aliases.length ? [" · also called ", e.aliases.map((a) => h("span", { class: "tag" }, a))] : null,
      " · first seen ", when(e.first_seen), " · last seen ", when(e.last_seen)),
    h("div", { class: "grid2" },
      section("Neighbours", graph.neighbours.length ? drawGraph(bank, graph) : empty("No neighbour: no memory mentions it with another entity.")),
      section("Closest", graph.neighbours.length
        ? table(["Entity", "Co-mentions", "Links"], graph.neighbours.map((n) => h("tr", {},
            h("td", {}, link(route("b", bank, "e", n.entity.id), n.entity.name)),
            h("td", { class: "num" }, n.co_mentions), h("td", { class: "num" }, n.links))))
        : empty("—"))),
    section("Latest memories mentioning it", graph.memories.length
      ? table(["Memory", "Type", "Said"], graph.memories.map((m) => h("tr", {},
          h("td", {}, link(route("b", bank, "m", m.id), truncate(m.text, 200))), h("td", {}, typeBadge(m.type)), h("td", {}, when(m.mentioned_at)))))
      : empty("None.")));
}

// The entity in the middle, its neighbours around it; a thicker line for more co-mentions.
function drawGraph(bank, graph) {
  const size = 420;
  const centre = size / 2;
  const radius = size / 2 - 70;
  const strongest = Math.max(...graph.neighbours.map((n) => n.co_mentions + n.links), 1);
  const nodes = graph.neighbours.map((n, i) => {
    const angle = (2 * Math.PI * i) / graph.neighbours.length - Math.PI / 2;
    return { n, x: centre + radius * Math.cos(angle), y: centre + radius * Math.sin(angle) };
  });
  const label = (text, x, y, cls) => svg("text", { x, y, "text-anchor": "middle", class: cls }, truncate(text, 18));
  return svg("svg", { viewBox: `0 0 ${size} ${size}`, class: "graph", role: "img", "aria-label": `${graph.entity.name} and its neighbours` },
    nodes.map(({ n, x, y }) => svg("line", { x1: centre, y1: centre, x2: x, y2: y, class: n.co_mentions ? "edge" : "edge link",
      "stroke-width": 1 + (5 * (n.co_mentions + n.links)) / strongest })),
    nodes.map(({ n, x, y }) => svg("a", { href: route("b", bank, "e", n.entity.id) },
      svg("title", {}, `${n.entity.name}: ${n.co_mentions} co-mentions, ${n.links} links`),
      svg("circle", { cx: x, cy: y, r: 8 + Math.min(14, Math.sqrt(n.entity.mentions) * 2), class: "node" }),
      label(n.entity.name, x, y + 30, "node-label"))),
    svg("circle", { cx: centre, cy: centre, r: 26, class: "node centre" }),
    label(graph.entity.name, centre, centre + 46, "node-label centre"));
}
