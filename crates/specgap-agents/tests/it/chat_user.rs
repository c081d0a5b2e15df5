//! The chat user: what it knows per condition, its prompts, empty replies.

use serde_json::json;
use specgap_agents::chat::{ChatConfig, ChatUser, UserKnowledge, UserRole};
use specgap_engine::condition::Condition;
use specgap_engine::session::{FeedbackContext, Question, User};

use crate::mock_server::{MockServer, Scripted, completion};

fn example(name: &str) -> specgap_task::TaskPackage {
    specgap_task::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks").join(name)).unwrap()
}

fn config(server: &MockServer) -> ChatConfig {
    let mut c = ChatConfig::new("user-model");
    c.base_url = server.url.clone();
    c.api_key_env = "SPECGAP_TEST_NO_SUCH_KEY".into();
    c.retry_base_ms = 1;
    c
}

#[test]
fn owner_and_customer_know_what_their_condition_allows() {
    let package = example("payment-retry");
    let partial = UserKnowledge::for_episode(&package, &Condition::parse("partial").unwrap());
    let full = UserKnowledge::for_episode(&package, &Condition::parse("full").unwrap());
    assert_eq!(partial.role, UserRole::Owner);
    let profile = package.user().unwrap();
    assert!(partial.system_prompt.contains(profile.persona.trim()));
    assert!(partial.system_prompt.contains(profile.understanding.trim()));
    assert!(partial.system_prompt.contains(profile.editable_surface.trim()));
    let full_text = package.instruction_full().unwrap().trim();
    assert!(!partial.system_prompt.contains(full_text));
    // Under full the owner's first message is instruction.full.md as the agent received it.
    assert_eq!(full.first_message, package.instruction_full().unwrap().trim_end());
    assert_eq!(partial.first_message, package.instruction().trim_end());
    assert!(full.system_prompt.contains("You also hold the complete specification of the work"));
    assert!(!partial.system_prompt.contains("complete specification"));
    for id in package.requirement_ids() {
        assert!(!partial.system_prompt.contains(id.as_str()) && !full.system_prompt.contains(id.as_str()));
    }
    let retail = example("retail-replenishment");
    let customer = UserKnowledge::for_episode(&retail, &Condition::parse("interact").unwrap());
    assert_eq!(customer.role, UserRole::Customer);
    assert!(customer.system_prompt.contains(retail.information().unwrap().trim()));
    assert_eq!(customer.first_message, retail.instruction().trim_end());
    for target in retail.clarifications() {
        assert!(!customer.system_prompt.contains(target.id.as_str()));
    }
}

#[test]
fn feedback_releases_the_detail_only_when_escalated_and_history_is_kept() {
    let server = MockServer::start(|_, n| Scripted::json(completion(Some(&format!("reply {n}")), &[], "stop")));
    let package = example("payment-retry");
    let knowledge = UserKnowledge::for_episode(&package, &Condition::parse("partial").unwrap());
    let mut user = ChatUser::new(&config(&server), knowledge, 3).unwrap();
    let observation = package.observations()[0].clone();
    let mut context = FeedbackContext {
        observation: observation.clone(),
        detail: "the filled detail 42".into(),
        escalated: false,
        text: observation.incident.clone(),
    };
    let first = user.feedback(&context).unwrap();
    assert_eq!(first.text, "reply 0");
    assert_eq!(first.usage.unwrap().requests, 1);
    context.escalated = true;
    user.feedback(&context).unwrap();
    let answer = user.answer(&Question { index: 0, turn: 3, text: "Is the log complete?".into() }).unwrap();
    assert_eq!(answer.text, "reply 2");
    let requests = server.requests();
    let last_user = |i: usize| requests[i].messages().last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(last_user(0).contains(observation.incident.trim()));
    assert!(last_user(0).contains(observation.scene.trim()));
    assert!(!last_user(0).contains("the filled detail 42"));
    assert!(last_user(1).contains("the filled detail 42"));
    assert!(last_user(2).contains("Is the log complete?"));
    let roles: Vec<&str> = requests[2].messages().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]);
    // The history starts with the owner's own first message, verbatim.
    let first = &requests[0].messages()[1..3];
    assert_eq!(first[0]["content"], "Write the first message you send the engineer, asking for the work.");
    assert_eq!(first[1]["content"].as_str().unwrap(), package.instruction().trim_end());
    assert!(requests.iter().all(|r| r.body.get("tools").is_none()));
}

#[test]
fn an_empty_reply_is_asked_again_then_fails() {
    let server = MockServer::sequence(vec![
        Scripted::json(completion(Some("  "), &[], "stop")),
        Scripted::json(json!({"choices": [{"message": {"content": null}, "finish_reason": ""}]})),
        Scripted::json(completion(Some("Use the settlement file."), &[], "stop")),
    ]);
    let package = example("payment-retry");
    let knowledge = UserKnowledge::for_episode(&package, &Condition::parse("partial").unwrap());
    let mut user = ChatUser::new(&config(&server), knowledge.clone(), 3).unwrap();
    let reply = user.answer(&Question { index: 0, turn: 1, text: "Which file?".into() }).unwrap();
    assert_eq!(reply.text, "Use the settlement file.");
    assert_eq!(reply.usage.unwrap().requests, 3);

    let silent = MockServer::start(|_, _| Scripted::json(completion(Some(""), &[], "stop")));
    let mut user = ChatUser::new(&config(&silent), knowledge, 3).unwrap();
    let error = user.answer(&Question { index: 0, turn: 1, text: "Which file?".into() }).unwrap_err();
    assert!(!error.deterministic);
    assert_eq!(silent.requests().len(), 3);
}

#[test]
fn the_owner_prompt_states_every_rule_of_seed_000_f4() {
    let package = example("payment-retry");
    let owner = UserKnowledge::for_episode(&package, &Condition::parse("partial").unwrap());
    let prompt = &owner.system_prompt;
    // One sentence per rule of App. F.4, in our words.
    for rule in [
        // The three things the owner knows.
        "your own picture of the project (what you want out of it, who it affects and what finished would look like",
        "the messages you have already sent the engineer, from the very first one on",
        "either something you have just seen while using the project or a message the engineer has just sent you",
        // Voice and length.
        "first person, plain words, no more than about 150 words",
        // An observation: what happened, its cost, then what must be different; no list.
        "tell the engineer what happened and what it is costing the project, and then, in one or two sentences, what you need to see differently the next time you look",
        "do not turn it into a list of conditions or requirements",
        // An engineer's message is a claim.
        "treat what it says as their claim, not as something you have seen for yourself",
        "say that you do not know and ask them to find it out from the project itself",
        "Bring up only problems you have seen yourself. Never list requirements or conditions you have not observed.",
        "Do not explain why something happened or suggest how to fix it, unless your own picture of the project already says so.",
        "Do not invent facts, numbers, names or preferences.",
        "Never ask the engineer to add tests, checks or recorded material.",
        "Never mention benchmarks, rubrics, scores, hidden tests, evaluators, or that any of this is a simulation.",
        "Answer with the message alone: no label, heading, quotation marks or commentary around it.",
    ] {
        assert!(prompt.contains(rule), "the owner prompt lacks: {rule}\n{prompt}");
    }
    // The persona, the understanding and the editable surface are filled in; no placeholder is left.
    let profile = package.user().unwrap();
    assert!(prompt.contains(&format!("What the engineer is allowed to change: {}", profile.editable_surface.trim())));
    assert!(!prompt.contains('{') && !prompt.contains('}'), "{prompt}");
}

/// The owner's latest item for `observation` with the built-in prompt: the two contexts of the
/// paper's registry (the detail once escalated) and the scene, nothing more.
fn built_in_observation_item(observation: &specgap_protocol::package::Observation, detail: Option<&str>) -> String {
    let measured = detail.map(|d| format!("\nWhat you measured this time: {d}")).unwrap_or_default();
    format!(
        "The latest item: something you saw while using the work the engineer delivered.\n\nWhere you were: {}\nWhat happened: {}{measured}\n\nWrite your next message to the engineer.",
        observation.scene.trim(),
        observation.incident.trim()
    )
}

#[test]
fn the_chat_owner_writes_its_own_request_from_the_observation_alone() {
    // Seed 000 App. F.4: the owner knows its picture of the project, its own messages and the
    // latest item, and says itself what it needs different. The format-2 `request` (the
    // author's ready sentence, which the relay owner relays) never reaches the model.
    let server = MockServer::start(|_, n| Scripted::json(completion(Some(&format!("reply {n}")), &[], "stop")));
    let package = example("payment-retry");
    let knowledge = UserKnowledge::for_episode(&package, &Condition::parse("partial").unwrap());
    let mut user = ChatUser::new(&config(&server), knowledge.clone(), 3).unwrap();
    let observations = package.observations();
    assert_eq!(observations.len(), 14);
    for (i, observation) in observations.iter().enumerate() {
        let escalated = i % 2 == 1;
        let context = FeedbackContext {
            observation: observation.clone(),
            detail: format!("measured {i}"),
            escalated,
            text: observation.incident.clone(),
        };
        let detail = format!("measured {i}");
        assert_eq!(knowledge.observation_message(&context), built_in_observation_item(observation, escalated.then_some(detail.as_str())));
        user.feedback(&context).unwrap();
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 14);
    for (i, request) in requests.iter().enumerate() {
        let detail = format!("measured {i}");
        let last = request.messages().last().unwrap()["content"].as_str().unwrap().to_string();
        assert_eq!(last, built_in_observation_item(&observations[i], (i % 2 == 1).then_some(detail.as_str())));
        // No message of any request (system prompt, history, latest item) holds a request.
        for message in request.messages() {
            let text = message["content"].as_str().unwrap();
            for observation in observations {
                let asked = observation.request.as_deref().unwrap().trim();
                assert!(!text.contains(asked), "request {i} carries `{asked}`");
            }
        }
    }
}

#[test]
fn a_replaced_observation_prompt_may_still_ask_for_the_request() {
    // `{request_note}` stays a placeholder a run's own owner_observation.md may use (an override
    // the run records); the built-in file does not.
    let package = example("payment-retry");
    let mut replaced = specgap_engine::prompt_files::Replacements::none();
    replaced.insert("owner_observation.md", "Saw: {incident}{request_note}");
    let partial = Condition::parse("partial").unwrap();
    let knowledge = UserKnowledge::for_episode_with(&package, &partial, package.instruction().trim_end(), &replaced);
    let observation = package.observations()[0].clone();
    let context = FeedbackContext { observation: observation.clone(), detail: String::new(), escalated: false, text: String::new() };
    assert_eq!(
        knowledge.observation_message(&context),
        format!(
            "Saw: {}\nWhat you need instead, as you would put it: {}",
            observation.incident.trim(),
            observation.request.as_deref().unwrap().trim()
        )
    );
}
