//! The avatar's rules: the image types and the 10 MB decoded limit of
//! spec 2.1, from a JSON body (base64) or raw image bytes.

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::conversations::model::ImageMediaType;
use crate::conversations::rules::{IMAGE_MEDIA_TYPES, MAX_IMAGE_BYTES};
use crate::error::{ApiError, ApiResult};

/// Standard alphabet; padding optional, as for prompt images.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The avatar as JSON; the raw form sends the image itself with its image content type.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AvatarRequest {
    /// The image, base64; 1 byte to 10 MB decoded.
    pub data: String,
    #[schema(value_type = ImageMediaType)]
    pub media_type: String,
}

/// An image's bytes, as sent and as served.
pub struct ImageBytes;

impl utoipa::PartialSchema for ImageBytes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some("The image's bytes (png, jpeg, gif or webp; at most 10 MB)."))
            .into()
    }
}

impl utoipa::ToSchema for ImageBytes {}

/// A checked avatar.
#[derive(Debug, PartialEq, Eq)]
pub struct Avatar {
    pub media_type: String,
    pub data: Vec<u8>,
}

fn check_media_type(media_type: &str) -> ApiResult<()> {
    if IMAGE_MEDIA_TYPES.contains(&media_type) {
        Ok(())
    } else {
        Err(ApiError::invalid("media_type", format!("must be one of {}", IMAGE_MEDIA_TYPES.join(", "))))
    }
}

fn check_size(len: usize) -> ApiResult<()> {
    if len == 0 {
        return Err(ApiError::invalid("data", "the image is empty"));
    }
    if len > MAX_IMAGE_BYTES {
        return Err(ApiError::invalid("data", "the image is over 10 MB"));
    }
    Ok(())
}

/// From the JSON form: a known image type and 1 byte to 10 MB of valid base64 (422 naming the field).
pub fn from_json(req: AvatarRequest) -> ApiResult<Avatar> {
    check_media_type(&req.media_type)?;
    // Base64 holds 3 bytes per 4 characters: a longer text cannot decode within the limit.
    if req.data.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
        return Err(ApiError::invalid("data", "the image is over 10 MB"));
    }
    let data = BASE64.decode(req.data.as_bytes()).map_err(|_| ApiError::invalid("data", "is not valid base64"))?;
    check_size(data.len())?;
    Ok(Avatar { media_type: req.media_type, data })
}

/// From raw bytes sent with `content_type` (its essence, lower case): an image type of
/// another kind is 422 on `media_type`; a body that is no image at all is 415.
pub fn from_raw(content_type: &str, data: Vec<u8>) -> ApiResult<Avatar> {
    if !content_type.starts_with("image/") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Send the avatar as application/json (AvatarRequest) or as the image itself with its image content type.",
        ));
    }
    check_media_type(content_type)?;
    check_size(data.len())?;
    Ok(Avatar { media_type: content_type.to_owned(), data })
}

/// The essence of a Content-Type header, lower case (`image/png` of `Image/PNG; x=y`).
pub fn essence(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(e: &ApiError) -> String {
        e.errors.as_ref().map(|m| m.keys().cloned().collect::<Vec<_>>().join(",")).unwrap_or_default()
    }

    #[test]
    fn json_at_the_limit_is_taken_and_one_byte_more_refused() {
        let at = BASE64.encode(vec![7u8; MAX_IMAGE_BYTES]);
        let a = from_json(AvatarRequest { data: at, media_type: "image/png".into() }).unwrap();
        assert_eq!(a.data.len(), MAX_IMAGE_BYTES);
        let over = BASE64.encode(vec![7u8; MAX_IMAGE_BYTES + 1]);
        let e = from_json(AvatarRequest { data: over, media_type: "image/png".into() }).unwrap_err();
        assert_eq!((e.status, field(&e)), (StatusCode::UNPROCESSABLE_ENTITY, "data".into()));
    }

    #[test]
    fn json_refusals_name_their_field() {
        let bad_type = from_json(AvatarRequest { data: "aGk=".into(), media_type: "image/bmp".into() }).unwrap_err();
        assert_eq!(field(&bad_type), "media_type");
        let bad_b64 = from_json(AvatarRequest { data: "not base64!".into(), media_type: "image/gif".into() });
        assert_eq!(field(&bad_b64.unwrap_err()), "data");
        let empty = from_json(AvatarRequest { data: String::new(), media_type: "image/webp".into() }).unwrap_err();
        assert_eq!(field(&empty), "data");
        // Unpadded base64 is taken, as for prompt images.
        assert_eq!(
            from_json(AvatarRequest { data: "aGk".into(), media_type: "image/jpeg".into() }).unwrap().data,
            b"hi"
        );
    }

    #[test]
    fn raw_bytes_follow_the_same_limits() {
        assert_eq!(from_raw("image/png", vec![1; MAX_IMAGE_BYTES]).unwrap().data.len(), MAX_IMAGE_BYTES);
        assert_eq!(field(&from_raw("image/png", vec![1; MAX_IMAGE_BYTES + 1]).unwrap_err()), "data");
        assert_eq!(field(&from_raw("image/png", Vec::new()).unwrap_err()), "data");
        assert_eq!(field(&from_raw("image/svg+xml", vec![1]).unwrap_err()), "media_type");
        assert_eq!(from_raw("text/plain", vec![1]).unwrap_err().status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(essence("Image/PNG; charset=binary"), "image/png");
    }
}
