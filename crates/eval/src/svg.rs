//! SVG displays rendered to PNG on the host, so the model sees the drawing as an image.
//!
//! `SVG(...)`, `%%svg`, `display_svg` and a raw `image/svg+xml` bundle arrive as SVG text, which
//! no client shows the model as an image. With the `svg` feature (on by default) the bundle gains
//! an `image/png` rendering (resvg, the system's fonts) and keeps its SVG text; without it, or
//! when the SVG does not parse, the model reads the source.

use crate::types::Bundle;

/// The SVG mime type, as Jupyter names it.
pub(crate) const SVG_MIME: &str = "image/svg+xml";

/// The mime types the model is shown as images.
pub(crate) const RASTER_MIMES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Whether `bundle` is an SVG drawing with no raster form yet: the bundle [`add_png`] renders.
pub(crate) fn wants_png(bundle: &Bundle) -> bool {
    bundle.get(SVG_MIME).is_some_and(serde_json::Value::is_string)
        && !RASTER_MIMES.iter().any(|m| bundle.contains_key(*m))
}

/// Adds an `image/png` rendering to a bundle that has SVG text and no raster image.
///
/// `Ok(true)`: rendered; `Ok(false)`: nothing to render (or this build renders no SVG);
/// `Err`: why the SVG could not be rendered, for a note beside its source.
pub(crate) async fn add_png(bundle: &mut Bundle) -> Result<bool, String> {
    if !wants_png(bundle) {
        return Ok(false);
    }
    let Some(svg) = bundle.get(SVG_MIME).and_then(serde_json::Value::as_str) else {
        return Ok(false);
    };
    match raster::png_base64(svg.to_string()).await? {
        Some(png) => {
            bundle.insert("image/png".into(), serde_json::Value::String(png));
            Ok(true)
        }
        None => Ok(false),
    }
}

#[cfg(feature = "svg")]
mod raster {
    use std::sync::{Arc, OnceLock};

    use base64::Engine;
    use resvg::{tiny_skia, usvg};

    /// A drawing whose longest side is shorter than this is enlarged to it (at most
    /// [`MAX_ENLARGE`] times): a 10-pixel icon is unreadable as an image.
    const MIN_SIDE: f32 = 256.0;
    const MAX_ENLARGE: f32 = 8.0;
    /// A drawing whose longest side is longer than this is reduced to it.
    const MAX_SIDE: f32 = 2048.0;

    /// Renders on a blocking thread: a large drawing (thousands of paths, a blur filter) must
    /// not hold up the runtime.
    pub(super) async fn png_base64(svg: String) -> Result<Option<String>, String> {
        let png = tokio::task::spawn_blocking(move || render(&svg))
            .await
            .map_err(|e| format!("the renderer failed: {e}"))??;
        Ok(Some(base64::engine::general_purpose::STANDARD.encode(png)))
    }

    fn render(svg: &str) -> Result<Vec<u8>, String> {
        let options = usvg::Options {
            fontdb: fonts(),
            // Data URLs only: an `href` naming a file would read the host's files, which a
            // kernel in a capsule cannot.
            image_href_resolver: usvg::ImageHrefResolver {
                resolve_data: usvg::ImageHrefResolver::default_data_resolver(),
                resolve_string: Box::new(|_, _| None),
            },
            ..usvg::Options::default()
        };
        let tree = usvg::Tree::from_str(svg, &options).map_err(|e| format!("{e}"))?;
        let size = tree.size();
        let longest = size.width().max(size.height());
        let scale = if longest < MIN_SIDE {
            (MIN_SIDE / longest).min(MAX_ENLARGE)
        } else if longest > MAX_SIDE {
            MAX_SIDE / longest
        } else {
            1.0
        };
        let side = |v: f32| ((v * scale).ceil() as u32).clamp(1, MAX_SIDE as u32);
        let (width, height) = (side(size.width()), side(size.height()));
        let mut pixmap = tiny_skia::Pixmap::new(width, height)
            .ok_or_else(|| format!("cannot make a {width}x{height} image"))?;
        // White, as a notebook shows it: a transparent drawing is black on black in some viewers.
        pixmap.fill(tiny_skia::Color::WHITE);
        resvg::render(&tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
        pixmap.encode_png().map_err(|e| format!("PNG encoding failed: {e}"))
    }

    /// The system's fonts, loaded once, with the generic families mapped to faces that exist
    /// (fontdb's defaults name Windows fonts; a family nobody has renders no text at all).
    fn fonts() -> Arc<usvg::fontdb::Database> {
        static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
        FONTS
            .get_or_init(|| {
                let mut db = usvg::fontdb::Database::new();
                db.load_system_fonts();
                let families: Vec<String> = db
                    .faces()
                    .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
                    .collect();
                let pick = |wanted: &[&str]| {
                    wanted
                        .iter()
                        .find(|w| families.iter().any(|f| f == *w))
                        .map(|w| w.to_string())
                        .or_else(|| families.first().cloned())
                };
                let sans = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica"];
                let serif = ["DejaVu Serif", "Liberation Serif", "Noto Serif", "Times New Roman"];
                let mono = ["DejaVu Sans Mono", "Liberation Mono", "Noto Sans Mono", "Courier New"];
                if let Some(f) = pick(&sans) {
                    db.set_sans_serif_family(f.clone());
                    db.set_cursive_family(f.clone());
                    db.set_fantasy_family(f);
                }
                if let Some(f) = pick(&serif) {
                    db.set_serif_family(f);
                }
                if let Some(f) = pick(&mono) {
                    db.set_monospace_family(f);
                }
                Arc::new(db)
            })
            .clone()
    }
}

#[cfg(not(feature = "svg"))]
mod raster {
    /// This build renders no SVG (the `svg` feature is off): the model reads the source.
    pub(super) async fn png_base64(_svg: String) -> Result<Option<String>, String> {
        Ok(None)
    }
}
