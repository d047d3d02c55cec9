//! `lps admin ...`: operator commands that act on the database directly (safe beside a running
//! server). With `--json` each prints one JSON object; otherwise a sentence.

use anyhow::bail;
use clap::{Args, Subcommand};
use lps::admin::Db;
use lps::admin::{self, BootstrapInput};
use serde_json::json;

use crate::announce;
use crate::flags::DatabaseArg;

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Creates an account, its owner, a workspace and a key bound to it.
    Bootstrap(BootstrapArgs),
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    #[command(subcommand)]
    Key(KeyCommand),
    #[command(subcommand)]
    Account(AccountCommand),
    #[command(subcommand)]
    Branding(BrandingCommand),
    #[command(subcommand)]
    User(UserCommand),
    /// Copies a SQLite database to `--to` while the server runs (a consistent snapshot,
    /// checked); for PostgreSQL it says how to use `pg_dump`.
    Backup {
        #[command(flatten)]
        database: DatabaseArg,
        /// The new file (never overwritten).
        #[arg(long)]
        to: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Puts a backup in place of the SQLite database (stop the server first); for PostgreSQL
    /// it says how to use `pg_restore`.
    Restore {
        #[command(flatten)]
        database: DatabaseArg,
        /// The backup file `lps admin backup` wrote.
        #[arg(long)]
        from: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum UserCommand {
    /// Sets a person's dashboard password (read from standard input unless `--password`).
    SetPassword {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        email: String,
        /// For scripts; otherwise the first line of standard input.
        #[arg(long)]
        password: Option<String>,
    },
}

#[derive(Subcommand)]
pub enum BrandingCommand {
    /// Adds a branding to a workspace (`--default` makes it the default).
    Create {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        workspace: i64,
        #[arg(long)]
        name: String,
        #[arg(long)]
        default: bool,
        #[command(flatten)]
        look: BrandingLookArgs,
        #[arg(long)]
        json: bool,
    },
    /// Changes a branding: the options given replace its values (`""` removes one).
    Update {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        branding: i64,
        #[arg(long)]
        name: Option<String>,
        /// Makes it the workspace's default branding.
        #[arg(long)]
        default: bool,
        #[command(flatten)]
        look: BrandingLookArgs,
        #[arg(long)]
        json: bool,
    },
}

/// What pages show of the sender: designs use them as `{{ branding.company_name }}`,
/// `{{ branding.logo_url }}`, `{{ branding.primary_color }}`, `{{ branding.website }}`,
/// `{{ sender.name }}`, `{{ sender.title }}`, `{{ sender.photo_url }}`.
#[derive(Args, Debug, Default)]
pub struct BrandingLookArgs {
    #[arg(long)]
    company_name: Option<String>,
    /// An https address of the logo image.
    #[arg(long)]
    logo_url: Option<String>,
    /// A hex colour, e.g. `#0f766e`.
    #[arg(long)]
    primary_color: Option<String>,
    #[arg(long)]
    website: Option<String>,
    #[arg(long)]
    sender_name: Option<String>,
    #[arg(long)]
    sender_title: Option<String>,
    /// An https address of the sender's photo.
    #[arg(long)]
    sender_photo_url: Option<String>,
}

impl From<BrandingLookArgs> for lps::admin::LookChange {
    fn from(look: BrandingLookArgs) -> Self {
        Self {
            company_name: look.company_name,
            logo_url: look.logo_url,
            primary_color: look.primary_color,
            website: look.website,
            sender_name: look.sender_name,
            sender_title: look.sender_title,
            sender_photo_url: look.sender_photo_url,
        }
    }
}

/// A branding as `lps admin branding ... --json` prints it.
fn branding_json(row: &lps::admin::BrandingRow) -> serde_json::Value {
    let look = &row.look;
    json!({
        "branding_id": row.id, "workspace_id": row.workspace_id, "name": row.name,
        "is_default": row.is_default != 0, "company_name": look.company_name,
        "logo_url": look.logo_url, "primary_color": look.primary_color, "website": look.website,
        "sender_name": look.sender_name, "sender_title": look.sender_title,
        "sender_photo_url": look.sender_photo_url,
    })
}

#[derive(Args)]
pub struct BootstrapArgs {
    #[command(flatten)]
    database: DatabaseArg,
    #[arg(long, default_value = "My Account")]
    account_name: String,
    #[arg(long, default_value = "My Workspace")]
    workspace_name: String,
    #[arg(long, default_value = "Owner")]
    user_name: String,
    #[arg(long, default_value = "owner@example.com")]
    user_email: String,
    /// Plan identifier, e.g. `pro_monthly`, `scale_yearly`, `free`.
    #[arg(long, default_value = admin::DEFAULT_PLAN)]
    plan: String,
    /// Credits in the account's pool.
    #[arg(long, default_value_t = admin::DEFAULT_CREDITS)]
    credits: i64,
    /// The owner's dashboard password (at least 8 characters); without it, set one later with
    /// `lps admin user set-password`.
    #[arg(long)]
    user_password: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
pub enum WorkspaceCommand {
    /// Adds a workspace to an account.
    Create {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long)]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Prints the secret that signs the workspace's callbacks.
    CallbackSecret {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        workspace: i64,
        #[arg(long)]
        json: bool,
    },
    /// Caps a workspace's credit use (`--limit none` uncaps it).
    SetLimit {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        workspace: i64,
        /// A number of credits, or `none`.
        #[arg(long)]
        limit: String,
    },
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Creates a key bound to `--workspace`, or with `--account ID --legacy` an unbound one.
    Create {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long, conflicts_with_all = ["account", "legacy"], required_unless_present = "legacy")]
        workspace: Option<i64>,
        #[arg(long, requires = "legacy")]
        account: Option<i64>,
        #[arg(long, requires = "account")]
        legacy: bool,
        #[arg(long, default_value = "Admin key")]
        name: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum AccountCommand {
    /// Changes an account's plan and optionally resets its credits.
    SetPlan {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long)]
        plan: String,
        #[arg(long)]
        credits: Option<i64>,
    },
}

pub async fn run(command: AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::Backup { database, to, json } => {
            let copy = lps::admin::backup(&database.database_url, &to).await?;
            announce(&if json {
                serde_json::to_string(&copy)?
            } else {
                format!(
                    "Backed up to {} ({} bytes, {} leads); checked.",
                    copy.path.display(),
                    copy.bytes,
                    copy.leads
                )
            });
        }
        AdminCommand::Restore {
            database,
            from,
            json,
        } => {
            let copy = lps::admin::restore(&from, &database.database_url).await?;
            announce(&if json {
                serde_json::to_string(&copy)?
            } else {
                format!(
                    "Restored {} to {} ({} leads); checked.",
                    from.display(),
                    copy.path.display(),
                    copy.leads
                )
            });
        }
        AdminCommand::User(UserCommand::SetPassword {
            database,
            email,
            password,
        }) => {
            let db = Db::connect_existing(&database.database_url).await?;
            let password = match password {
                Some(password) => password,
                None => {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line)?;
                    line.trim_end_matches(['\r', '\n']).to_owned()
                }
            };
            let user_id = admin::set_password(&db, &email, &password).await?;
            announce(&format!("Password set for user {user_id} ({email})."));
        }
        AdminCommand::Bootstrap(args) => {
            let db = Db::connect(&args.database.database_url).await?;
            let input = BootstrapInput {
                account_name: args.account_name,
                workspace_name: args.workspace_name,
                user_name: args.user_name,
                user_email: args.user_email,
                plan: args.plan,
                credits: args.credits,
            };
            let made = admin::bootstrap(&db, &input).await?;
            if let Some(password) = &args.user_password {
                admin::set_password(&db, &input.user_email, password).await?;
            }
            if args.json {
                announce(&serde_json::to_string(&made)?);
            } else {
                announce(&format!(
                    "Created account {}, user {}, workspace {}. API key (shown once): {}",
                    made.account_id, made.user_id, made.workspace_id, made.api_key
                ));
            }
        }
        AdminCommand::Workspace(WorkspaceCommand::Create {
            database,
            account,
            name,
            json,
        }) => {
            let db = Db::connect_existing(&database.database_url).await?;
            let workspace_id = admin::create_workspace(&db, account, &name).await?;
            announce_as(
                json,
                json!({ "workspace_id": workspace_id }),
                format!("Created workspace {workspace_id}."),
            );
        }
        AdminCommand::Workspace(WorkspaceCommand::CallbackSecret {
            database,
            workspace,
            json,
        }) => {
            let db = Db::connect_existing(&database.database_url).await?;
            let secret = admin::callback_secret(&db, workspace).await?;
            announce_as(json, json!({ "callback_secret": secret }), secret);
        }
        AdminCommand::Branding(BrandingCommand::Create {
            database,
            workspace,
            name,
            default,
            look,
            json,
        }) => {
            let db = Db::connect_existing(&database.database_url).await?;
            let branding_id =
                admin::create_branding(&db, workspace, &name, default, look.into()).await?;
            announce_as(
                json,
                json!({ "branding_id": branding_id }),
                format!("Created branding {branding_id}."),
            );
        }
        AdminCommand::Branding(BrandingCommand::Update {
            database,
            branding,
            name,
            default,
            look,
            json,
        }) => {
            let db = Db::connect_existing(&database.database_url).await?;
            let change = admin::BrandingChange {
                name,
                make_default: default,
                look: look.into(),
            };
            let row = admin::update_branding(&db, branding, change).await?;
            announce_as(
                json,
                branding_json(&row),
                format!("Updated branding {}.", row.id),
            );
        }
        AdminCommand::Workspace(WorkspaceCommand::SetLimit {
            database,
            workspace,
            limit,
        }) => {
            let limit = match limit.trim() {
                "none" => None,
                number => match number.parse::<i64>() {
                    Ok(n) if n >= 0 => Some(n),
                    _ => bail!("--limit must be a number of credits or `none`, not {limit:?}"),
                },
            };
            let db = Db::connect_existing(&database.database_url).await?;
            admin::set_workspace_limit(&db, workspace, limit).await?;
            announce(&match limit {
                Some(n) => format!("Workspace {workspace} is capped at {n} credits."),
                None => format!("Workspace {workspace} is uncapped."),
            });
        }
        AdminCommand::Key(KeyCommand::Create {
            database,
            workspace,
            account,
            legacy: _,
            name,
            json,
        }) => {
            let db = Db::connect_existing(&database.database_url).await?;
            let key = match (workspace, account) {
                (Some(workspace), _) => admin::create_workspace_key(&db, workspace, &name).await?,
                (None, Some(account)) => admin::create_legacy_key(&db, account, &name).await?,
                (None, None) => bail!("give --workspace ID, or --account ID --legacy"),
            };
            announce_as(
                json,
                json!({ "id": key.id, "api_key": key.plaintext }),
                format!("Created key {}: {}", key.id, key.plaintext),
            );
        }
        AdminCommand::Account(AccountCommand::SetPlan {
            database,
            account,
            plan,
            credits,
        }) => {
            let db = Db::connect_existing(&database.database_url).await?;
            admin::set_plan(&db, account, &plan, credits).await?;
            announce(&format!("Account {account} is on plan {plan}."));
        }
    }
    Ok(())
}

/// The command's outcome on standard output: as one JSON object with `--json`, else as words.
fn announce_as(json: bool, value: serde_json::Value, words: String) {
    announce(&if json { value.to_string() } else { words });
}
