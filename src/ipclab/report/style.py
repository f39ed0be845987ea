"""The report's styles: ``CSS`` lays the PDF out on A4 pages (Chromium prints with it);
``SITE_CSS``, added after it on the site, suits a screen: one readable column, tables that
scroll sideways instead of shrinking, and the claims filter."""

CSS = """
@page {
  size: A4; margin: 15mm 14mm 16mm 14mm;
  @bottom-left { content: "ipclab reproduction report"; font: 7pt "DejaVu Sans"; color: #777; }
  @bottom-right { content: "page " counter(page) " of " counter(pages);
                  font: 7pt "DejaVu Sans"; color: #777; }
}
@page wide { size: A4 landscape; margin: 14mm 14mm 14mm 14mm; }
section.landscape { page: wide; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font-family: "DejaVu Sans", sans-serif; font-size: 9pt; line-height: 1.35; color: #111;
       margin: 0; }
h1 { font-size: 15pt; margin: 0 0 3mm 0; }
h1.study-title { break-before: page; border-bottom: 1pt solid #333; padding-bottom: 1.5mm; }
h2 { font-size: 11pt; margin: 5mm 0 2mm 0; break-after: avoid; }
p, li { orphans: 2; widows: 2; }
ul { margin: 1mm 0 2mm 0; padding-left: 5mm; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; overflow-wrap: anywhere; }
.quiet { color: #555; font-size: 8pt; }
.title-page { break-after: page; }
.answer { break-after: page; }
.answer h1.title { font-size: 20pt; margin-bottom: 2mm; }
.answer .kicker { font-size: 9pt; letter-spacing: 0.2em; text-transform: uppercase; color: #555;
                  margin: 2mm 0 1mm 0; }
.answer h2 { margin-top: 3mm; }
.answer h3 { font-size: 9pt; margin: 2mm 0 0.5mm 0; }
svg.chart { display: block; width: 100%; height: auto; margin: 1mm 0 2mm 0; }
ul.counts { columns: 2; column-gap: 6mm; font-size: 7pt; margin: 0 0 2mm 0; }
ul.key-findings { font-size: 7.5pt; margin: 0 0 1mm 0; }
ul.key-findings a { color: inherit; text-decoration: none; }
li.v-rev { color: #8a1c1c; }
ul.key-findings .evidence a, table.study-tests td a { color: #1f4e8c; text-decoration: none; }
ul.key-findings .evidence { font-size: 0.9em; }
table.folders, table.study-tests { width: 100%; }
.title-page .kicker { font-size: 10pt; letter-spacing: 0.2em; text-transform: uppercase;
                      color: #555; margin: 6mm 0 1mm 0; }
.title-page h1.title { font-size: 22pt; line-height: 1.2; margin-bottom: 3mm; }
.title-page .subtitle { font-size: 11pt; color: #333; margin-bottom: 5mm; }
ul.studies { list-style: none; padding-left: 0; font-size: 9pt; }
ul.studies a { color: inherit; text-decoration: none; }
ul.skipped li, .missing { color: #8a1c1c; }
.missing { border: 0.6pt dashed #8a1c1c; padding: 2mm; margin: 2mm 0 4mm 0; }
table.kv { border-collapse: collapse; width: 100%; font-size: 8.5pt; margin-bottom: 4mm; }
table.kv th { text-align: left; vertical-align: top; width: 32mm; padding: 1pt 4pt 1pt 0;
              color: #333; font-weight: bold; }
table.kv td { padding: 1pt 0; overflow-wrap: anywhere; }
table.kv tr { border-bottom: 0.4pt solid #ddd; }
table.kv.params th { width: 45mm; }
figure { break-inside: avoid; margin: 0 0 6mm 0; }
figure img { display: block; max-width: 100%; max-height: 200mm; margin: 0 auto; }
section.study > figure img { max-height: 80mm; }
figcaption { font-size: 8.5pt; margin-top: 1.5mm; }
.label { font-weight: bold; }
.table-block { margin: 0 0 6mm 0; }
table.tbl { border-collapse: collapse; max-width: 100%;
            font-family: "DejaVu Sans Condensed", "DejaVu Sans", sans-serif; line-height: 1.25; }
.tcap { font-size: 8.5pt; line-height: 1.35; margin: 0 0 1.5mm 0; break-after: avoid; }
table.tbl th, table.tbl td { padding: 1.2pt 3pt; border-bottom: 0.4pt solid #ccc;
                             vertical-align: top; }
table.tbl thead { display: table-header-group; }
table.tbl th { background: #e9ecef; text-align: left; font-weight: bold;
               border-bottom: 0.8pt solid #555; }
table.tbl tr { break-inside: avoid; }
table.tbl th.num { text-align: right; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.txt { overflow-wrap: break-word; }
td.long { overflow-wrap: anywhere; }
.sub { color: #555; font-size: 0.92em; margin-top: 0.5pt; }
.sub.note { color: #7a4a00; }
td.verdict { font-weight: bold; white-space: nowrap; }
.v-ok { background: #d3ecd9; color: #14532d; }
.v-bad { background: #f6d3d6; color: #7f1d1d; }
.v-unk { background: #fbefc6; color: #6b4e00; }
.v-low { background: #e6e3f3; color: #3d2e7a; }
.v-other { background: #e2e3e5; color: #333; }
table.claims, table.allclaims { width: 100%; table-layout: fixed; }
table.claims td, table.allclaims td { overflow-wrap: anywhere; }
table.claims td.verdict { padding-right: 4pt; }
table.claims td.verdict, table.allclaims td.verdict { overflow-wrap: normal; }
table.claims col.c-id { width: 5%; } table.claims col.c-cmp { width: 18%; }
table.claims col.c-pub { width: 11%; } table.claims col.c-meas { width: 13%; }
table.claims col.c-p { width: 5.5%; } table.claims col.c-d { width: 9.5%; }
table.claims col.c-v { width: 11.5%; } table.claims col.c-why { width: 26.5%; }
table.claims tbody.stmt { break-inside: avoid; }
table.claims tr.quote td { background: #f3f5f9; border-top: 0.8pt solid #888;
                           font-size: 1.05em; padding-top: 2pt; }
table.claims q { font-style: italic; }
table.allclaims th:nth-child(1) { width: 12%; } table.allclaims th:nth-child(2) { width: 6%; }
table.allclaims th:nth-child(3) { width: 17%; } table.allclaims th:nth-child(4) { width: 26%; }
table.allclaims th:nth-child(5) { width: 19%; } table.allclaims th:nth-child(6) { width: 7%; }
table.allclaims th:nth-child(7) { width: 13%; }
table.counts th, table.counts td { padding: 2pt 8pt; }
table.counts tr.total td { font-weight: bold; border-top: 0.8pt solid #555; }
table.runlog { width: 100%; font-family: "DejaVu Sans Condensed", "DejaVu Sans", sans-serif; }
.rules { font-size: 8pt; line-height: 1.35; color: #222; }
"""

SITE_CSS = """
body { max-width: 72rem; margin: 0 auto; padding: 1rem 1.5rem 4rem 1.5rem; font-size: 10.5pt;
       line-height: 1.45; }
h1.study-title { margin-top: 2.5rem; }
.title-page .kicker { margin-top: 1rem; }
.title-page, .title-page h1.title { break-after: auto; }
ul.studies a, h1 a { color: inherit; }
.table-block { overflow-x: auto; zoom: 1.2; }  /* sized for A4 (688 px): a screen is wider */
figure img { max-height: none; }
a.data { font-size: 8pt; margin-left: 0.4em; }
form.filter { position: sticky; top: 0; z-index: 1; background: #fff; display: flex;
              flex-wrap: wrap; gap: 0.4rem 1.2rem; align-items: center; padding: 0.5rem 0;
              border-bottom: 1px solid #999; margin-bottom: 0.6rem; font-size: 9.5pt; }
form.filter select { font: inherit; }
form.filter output { color: #555; }
nav.site { display: flex; gap: 1.2rem; padding: 0.4rem 0; border-bottom: 1px solid #999;
           margin-bottom: 0.8rem; font-size: 10pt; }
nav.site a[aria-current] { font-weight: bold; color: inherit; text-decoration: none; }
table#claims-page { font-size: 9pt; width: 100%; }
table#claims-page th { white-space: nowrap; }
table#claims-page td { vertical-align: top; }
.table-block:has(#claims-page) { zoom: 1; }
"""
