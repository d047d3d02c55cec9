//! The model provider: an OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama,
//! llama.cpp server), configured by `--llm-base-url`, `--llm-api-key`, `--llm-model`. Design
//! generation and the enrichment analyses ask it through [`Llm::chat`], which retries 429 and
//! 5xx answers (honouring `Retry-After`) and transport errors with backoff, and bounds the
//! answer's size.

use std::time::Duration;

use serde_json::{Value, json};

/// An OpenAI-compatible provider.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// e.g. `https://api.openai.com/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

/// Bytes of an answer read at most.
const MAX_ANSWER_BYTES: usize = 1_000_000;
/// Attempts on 429 and 5xx answers and on transport errors.
const ATTEMPTS: u32 = 3;

/// Why a chat gave nothing usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmError {
    /// The server could not be asked, or kept failing: a phrase such as "the model server
    /// answered 500 Internal Server Error (3 attempts)".
    Failed(String),
    /// It answered, but not with something usable: a phrase such as "no message content".
    Unusable(String),
}

pub struct Llm {
    config: LlmConfig,
    client: reqwest::Client,
}

impl Llm {
    pub fn new(config: LlmConfig) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(90))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Self { config, client }
    }

    /// The content of `choices[0].message.content` for a system and a user message;
    /// `response_format` is passed as given (a JSON schema, say).
    pub async fn chat(
        &self,
        system: &str,
        user: &str,
        response_format: Option<Value>,
    ) -> Result<String, LlmError> {
        crate::telemetry::traced(
            || tracing::info_span!("model chat", otel.kind = "client"),
            self.chat_untraced(system, user, response_format),
        )
        .await
    }

    async fn chat_untraced(
        &self,
        system: &str,
        user: &str,
        response_format: Option<Value>,
    ) -> Result<String, LlmError> {
        let mut body = json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        });
        if let Some(format) = response_format {
            body["response_format"] = format;
        }
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let mut delay = Duration::from_millis(500);
        let mut last_problem = String::new();
        for attempt in 1..=ATTEMPTS {
            let mut request = crate::outbound::traced(self.client.post(&url)).json(&body);
            if let Some(key) = &self.config.api_key {
                request = request.bearer_auth(key);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    let bytes = read_bounded(response).await?;
                    return content_of(&bytes);
                }
                Ok(response) => {
                    let status = response.status();
                    last_problem = format!("the model server answered {status}");
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    if !retryable {
                        return Err(LlmError::Failed(last_problem));
                    }
                    if let Some(wait) = retry_after(&response) {
                        delay = wait.min(Duration::from_secs(30));
                    }
                }
                Err(err) if err.is_timeout() => {
                    last_problem = "the model server did not answer in time".to_owned();
                }
                Err(_) => last_problem = "the model server could not be reached".to_owned(),
            }
            if attempt < ATTEMPTS {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
        Err(LlmError::Failed(format!(
            "{last_problem} ({ATTEMPTS} attempts)"
        )))
    }
}

/// A JSON object out of a model's content, tolerating a fenced code block around it.
pub fn json_object(content: &str) -> Result<Value, LlmError> {
    let content = content.trim();
    let content = content
        .strip_prefix("```json")
        .or_else(|| content.strip_prefix("```"))
        .map(|rest| rest.trim_end().trim_end_matches("```"))
        .unwrap_or(content);
    match serde_json::from_str::<Value>(content.trim()) {
        Ok(value) if value.is_object() => Ok(value),
        _ => Err(LlmError::Unusable("its content is not JSON".to_owned())),
    }
}

/// `response_format` asking for an object of the named string fields, all required.
pub fn string_fields_schema(name: &str, fields: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|field| ((*field).to_owned(), json!({"type": "string"})))
        .collect();
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": name,
            "strict": true,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": fields,
                "additionalProperties": false,
            },
        },
    })
}

async fn read_bounded(response: reqwest::Response) -> Result<Vec<u8>, LlmError> {
    let mut response = response;
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > MAX_ANSWER_BYTES {
                    return Err(LlmError::Unusable("it was too large".to_owned()));
                }
            }
            Ok(None) => return Ok(bytes),
            Err(_) => return Err(LlmError::Unusable("it was cut off".to_owned())),
        }
    }
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: u64 = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// `choices[0].message.content` of a chat-completions answer.
fn content_of(bytes: &[u8]) -> Result<String, LlmError> {
    let reply: Value =
        serde_json::from_slice(bytes).map_err(|_| LlmError::Unusable("not JSON".to_owned()))?;
    reply["choices"][0]["message"]["content"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| LlmError::Unusable("no message content".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_are_read_with_or_without_a_code_fence() {
        let wrap = |content: &str| {
            json!({"choices": [{"message": {"content": content}}]})
                .to_string()
                .into_bytes()
        };
        let plain = content_of(&wrap(r#"{"html":"<p>Hi</p>"}"#)).unwrap();
        assert_eq!(json_object(&plain).unwrap()["html"], "<p>Hi</p>");
        let fenced = content_of(&wrap("```json\n{\"html\":\"<p>Hi</p>\"}\n```")).unwrap();
        assert_eq!(json_object(&fenced).unwrap()["html"], "<p>Hi</p>");
        assert!(json_object("I cannot help with that").is_err());
        assert!(json_object("[1, 2]").is_err());
        assert!(content_of(b"<html>").is_err());
        assert!(content_of(br#"{"choices": []}"#).is_err());
    }
}
