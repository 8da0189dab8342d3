//! The map as a reader gets it: the drawing inside a viewport with its tools (station search,
//! zoom, the legend button) and the legend, its lines grouped by area, each with a switch.
//!
//! Why HTML around the SVG: the legend and the search are text a reader scans, and they stay
//! usable at any zoom and on a phone; the script (`book/assets/map.js`) adds pan, zoom, the
//! overview by area and the `#line=` hash. Without the script the drawing still shows at its
//! natural size in a scrolling box, with the legend under it. One line of HTML, no blank line,
//! so mdBook keeps it one HTML block.

use super::svg::{esc, global as drawing};
use super::Layout;
use std::fmt::Write;

/// The legend: one group per area, one switch per line; a line's name selects it on the map
/// (the script; without it, the name opens the path), the arrow opens its path page.
fn legend(layout: &Layout, base: &str) -> String {
    let mut s = String::from(
        r#"<div class="hdlc-maplegend" id="hdlc-maplegend"><div class="hdlc-maplegend-head"><strong>노선</strong> <button type="button" data-all="1">모두</button> <button type="button" data-all="0">지우기</button></div>"#,
    );
    for a in &layout.areas {
        let _ = write!(
            s,
            r#"<fieldset class="hdlc-maplegend-area" data-area="{k}"><legend><label><input type="checkbox" checked data-group="{k}"> {t}</label></legend>"#,
            k = esc(&a.key),
            t = esc(&a.title)
        );
        for &li in &a.lines {
            let l = &layout.lines[li];
            let _ = write!(
                s,
                r#"<div class="hdlc-maplegend-line" data-line="{id}" style="--line: {c}"><input type="checkbox" checked aria-label="{t} 보이기" data-line="{id}"><a href="{base}paths/{id}.html" data-line="{id}">{t}</a><a class="hdlc-maplegend-go" href="{base}paths/{id}.html" title="{t}: 경로 페이지" aria-label="{t}: 경로 페이지">→</a></div>"#,
                id = esc(&l.id),
                c = esc(&l.color),
                t = esc(&l.title)
            );
        }
        s.push_str("</fieldset>");
    }
    s.push_str("</div>");
    s
}

/// The tools above the viewport; the station names go into the search's suggestions.
fn tools(layout: &Layout) -> String {
    let mut names: Vec<&str> = layout.stations.iter().map(|s| s.title.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut options = String::new();
    for n in names {
        let _ = write!(options, r#"<option value="{}"></option>"#, esc(n));
    }
    format!(
        r#"<div class="hdlc-maptools" role="toolbar" aria-label="지도 도구"><input class="hdlc-mapsearch" type="search" placeholder="역 찾기" aria-label="역 찾기" list="hdlc-map-stations" autocomplete="off"><datalist id="hdlc-map-stations">{options}</datalist><button type="button" data-act="fit" title="전체 보기 (0)">전체</button><button type="button" data-act="out" title="축소 (−)" aria-label="축소">−</button><button type="button" data-act="in" title="확대 (+)" aria-label="확대">+</button><button type="button" data-act="legend" aria-expanded="false" aria-controls="hdlc-maplegend">노선 {n}</button></div>"#,
        n = layout.lines.len()
    )
}

/// The whole widget. `prefix` leads to card pages; path pages are beside them.
pub fn widget(layout: &Layout, prefix: &str) -> String {
    let base = prefix.strip_suffix("cards/").unwrap_or("");
    format!(
        r#"<div class="hdlc-mapview">{tools}<div class="hdlc-mapport" tabindex="0" role="region" aria-label="전체 지식 지도: 끌어서 옮기고, 휠·핀치·+/− 키로 확대합니다"><div class="hdlc-mapstage">{svg}</div><div class="hdlc-mapchips" aria-hidden="true"></div></div>{legend}</div>"#,
        tools = tools(layout),
        svg = drawing(layout, prefix),
        legend = legend(layout, base)
    )
}
