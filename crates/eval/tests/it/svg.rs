//! SVG displays reach the model as PNG images (rendered on the host, the source kept beside a
//! short drawing), JSON displays as data: with the real kernels (the test venv's IPython, Node).

use crate::common;

use agent_tools_eval::{CellStatus, EvalConfig, Language, PayloadOutput, payload};
use common::{Session, require, test_python};

/// A 10×10 red square: rendered enlarged 8 times (a tiny drawing is unreadable as an image).
const RED_SQUARE: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><rect width=\"10\" height=\"10\" fill=\"red\"/></svg>";

fn python_session(config: EvalConfig) -> Option<Session> {
    let Some(python) = test_python() else {
        require("the test venv (IPython)", false, "run `cargo xtask setup`");
        return None;
    };
    Some(Session::new(Language::Python, EvalConfig { python: Some(python), ..config }))
}

/// The cell's images decoded: (width, height, the RGBA of the centre pixel).
#[cfg(feature = "svg")]
fn decoded(report: &agent_tools_eval::CellReport) -> Vec<(u32, u32, [u8; 4])> {
    use resvg::tiny_skia::Pixmap;
    agent_tools_eval::images(report)
        .iter()
        .map(|image| {
            assert_eq!(image.mime_type, "image/png");
            let pixmap = Pixmap::decode_png(&image.data).expect("a PNG");
            let c = pixmap.pixel(pixmap.width() / 2, pixmap.height() / 2).expect("a pixel");
            (pixmap.width(), pixmap.height(), [c.red(), c.green(), c.blue(), c.alpha()])
        })
        .collect()
}

#[cfg(feature = "svg")]
const RED: [u8; 4] = [255, 0, 0, 255];
#[cfg(feature = "svg")]
const WHITE: [u8; 4] = [255, 255, 255, 255];

/// Every way a notebook user shows SVG: the model gets one PNG of the drawing, and the short
/// source beside it.
#[cfg(feature = "svg")]
#[tokio::test]
async fn every_svg_display_of_ipython_is_an_image_of_the_drawing() {
    let Some(s) = python_session(EvalConfig::default()) else { return };
    let cells = [
        format!("from IPython.display import SVG\nSVG('{RED_SQUARE}')"),
        format!("from IPython.display import display_svg\ndisplay_svg('{RED_SQUARE}', raw=True)"),
        format!("display_svg(SVG('{RED_SQUARE}'))"),
        format!("%%svg\n{RED_SQUARE}"),
        format!(
            "class Drawing:\n    def _repr_svg_(self):\n        return '{RED_SQUARE}'\n    def __repr__(self):\n        return 'Drawing()'\nDrawing()"
        ),
        format!("display({{'image/svg+xml': '{RED_SQUARE}', 'text/plain': 'raw'}}, raw=True)"),
    ];
    for code in &cells {
        let (r, text) = s.run(code).await;
        assert_eq!(r.status, CellStatus::Ok, "{code}: {text}");
        assert_eq!(decoded(&r), [(80, 80, RED)], "{code}: {text}");
        assert!(text.contains("(image/png, "), "{code}: {text}");
        assert!(text.contains("rendered from the SVG below)]\n<svg"), "{code}: {text}");
        assert!(!text.contains("SVG object"), "{code}: {text}");
        // The payload (what clients show the model) references the same image.
        let shown = payload(&r);
        let image = shown.value.as_ref().and_then(|v| v.image).or_else(|| {
            shown.outputs.iter().find_map(|o| match o {
                PayloadOutput::Display(d) => d.image,
                _ => None,
            })
        });
        assert_eq!(image, Some(1), "{code}: {shown:?}");
    }
    let (_, text) = s.run("Drawing()").await;
    assert!(text.contains("[image 1: Drawing() (image/png"), "its repr names it: {text}");
    s.kernels.shutdown().await;
}

/// Text is drawn with the system's fonts; a large drawing (matplotlib's SVG backend) is an
/// image without its long source; SVG that does not parse shows its source and says why; an
/// `href` to a file is not read (the host's files are not the kernel's).
#[cfg(feature = "svg")]
#[tokio::test]
async fn svg_text_large_drawings_bad_svg_and_file_references() {
    let Some(s) = python_session(EvalConfig::default()) else { return };
    let (r, text) = s
        .run("display_svg = __import__('IPython.display').display.display_svg\ndisplay_svg('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"300\" height=\"100\"><rect width=\"300\" height=\"100\" fill=\"white\"/><text x=\"150\" y=\"65\" font-size=\"60\" font-family=\"sans-serif\" text-anchor=\"middle\">MMMM</text></svg>', raw=True)")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    let image = &agent_tools_eval::images(&r)[0];
    let pixmap = resvg::tiny_skia::Pixmap::decode_png(&image.data).expect("a PNG");
    let dark = pixmap.pixels().iter().filter(|p| p.red() < 128).count();
    assert!(dark > 1000, "the text is drawn ({dark} dark pixels): {text}");

    let (r, text) = s
        .run(
            "import io, matplotlib.pyplot as plt\nfrom IPython.display import SVG\n\
             fig, ax = plt.subplots(); ax.plot([1, 2, 3]); ax.set_title('a line')\n\
             buf = io.StringIO(); fig.savefig(buf, format='svg'); plt.close(fig)\n\
             SVG(buf.getvalue())",
        )
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(decoded(&r).len(), 1, "{text}");
    assert!(text.contains("rendered from SVG; its source of "), "{text}");
    assert!(!text.contains("<path"), "the long source is not shown: {text}");

    let (r, text) = s.run("display({'image/svg+xml': '<svg><rect'}, raw=True)").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(decoded(&r).is_empty(), "{text}");
    assert!(text.contains("[SVG image, 10 characters]\n<svg><rect"), "{text}");
    assert!(text.contains("an SVG display could not be rendered to an image ("), "{text}");

    let file = s.root().join("red.svg");
    std::fs::write(&file, RED_SQUARE).expect("write");
    let (r, text) = s
        .run(&format!(
            "display({{'image/svg+xml': '<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><image href=\"{}\" width=\"10\" height=\"10\"/></svg>'}}, raw=True)",
            file.display()
        ))
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(decoded(&r), [(80, 80, WHITE)], "the file is not drawn: {text}");
    s.kernels.shutdown().await;
}

/// At most `max_images` images per cell: an SVG past the limit keeps its source for the model.
#[cfg(feature = "svg")]
#[tokio::test]
async fn an_svg_past_the_image_limit_keeps_its_source() {
    let Some(s) = python_session(EvalConfig { max_images: 1, ..EvalConfig::default() }) else {
        return;
    };
    let (r, text) = s
        .run(&format!(
            "from IPython.display import SVG, display\ndisplay(SVG('{RED_SQUARE}'))\ndisplay(SVG('{}'))",
            RED_SQUARE.replace("red", "blue")
        ))
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(decoded(&r), [(80, 80, RED)], "{text}");
    assert!(text.contains("[SVG image, ") && text.contains("fill=\"blue\""), "{text}");
    assert!(text.contains("1 more image(s) not shown"), "{text}");
    s.kernels.shutdown().await;
}

/// Node.js and QuickJS: a raw `image/svg+xml` bundle is an image too.
#[cfg(feature = "svg")]
#[tokio::test]
async fn javascript_svg_bundles_are_images() {
    let display = format!("display({{'image/svg+xml': '{RED_SQUARE}'}}, {{raw: true}})");
    if let Some(s) = common::node_session(EvalConfig::default()) {
        let (r, text) = s.run(&display).await;
        assert_eq!(r.status, CellStatus::Ok, "{text}");
        assert_eq!(decoded(&r), [(80, 80, RED)], "Node.js: {text}");
        s.kernels.shutdown().await;
    }
    let s = Session::new(
        Language::Javascript,
        EvalConfig {
            javascript: Some(agent_tools_eval::JsEngine::Quickjs),
            ..EvalConfig::default()
        },
    );
    let (r, text) = s
        .run(&format!(
            "display({{[Symbol.for('Jupyter.display')]() {{ return {{'image/svg+xml': '{RED_SQUARE}'}} }}}})"
        ))
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(decoded(&r), [(80, 80, RED)], "QuickJS: {text}");
    s.kernels.shutdown().await;
}

/// Without the `svg` feature the model reads the drawing's source.
#[cfg(not(feature = "svg"))]
#[tokio::test]
async fn without_the_svg_feature_the_model_reads_the_source() {
    let Some(s) = python_session(EvalConfig::default()) else { return };
    let (r, text) = s.run(&format!("from IPython.display import SVG\nSVG('{RED_SQUARE}')")).await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(agent_tools_eval::images(&r).is_empty(), "{text}");
    assert!(text.contains("[SVG image, ") && text.contains("fill=\"red\""), "{text}");
    s.kernels.shutdown().await;
}

/// `JSON(...)` and `display_json` are data: the payload carries the value, the text shows it.
#[tokio::test]
async fn json_displays_are_data() {
    let Some(s) = python_session(EvalConfig::default()) else { return };
    let (r, text) = s.run("from IPython.display import JSON\nJSON({'a': [1, 2], 'b': None})").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(
        payload(&r).value.and_then(|v| v.data),
        Some(serde_json::json!({"a": [1, 2], "b": null})),
        "{text}"
    );
    assert!(text.contains("\"a\": [") && !text.contains("JSON object"), "{text}");
    let (r, text) =
        s.run("from IPython.display import display_json\ndisplay_json({'k': 'v'}, raw=True)").await;
    let data = payload(&r).outputs.into_iter().find_map(|o| match o {
        PayloadOutput::Display(d) => d.data,
        _ => None,
    });
    assert_eq!(data, Some(serde_json::json!({"k": "v"})), "{text}");
    s.kernels.shutdown().await;
}
