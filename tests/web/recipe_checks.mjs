// The seed's recipes in the browser (browser_test.mjs calls this with the fixture loaded as the current model, one
// decode row): ghostText supersession, ask on one input and on an array (one batch, one task), a background ask
// preempted by an interactive one, and a conversation's history and reset. Greedy throughout, so texts compare.
//   await checkRecipes(page, check, {prompt, nativeText, tokens})
export async function checkRecipes(page, check, {prompt, nativeText, tokens}) {
  // Ghost text: a second call of the same session supersedes the first while it streams; the second completes
  // with the recipe's max_tokens (24) and the same text as a plain ask of the same input (no prompt authoring).
  const g = await page.evaluate(async ({prompt}) => {
    const e = window.demo.engine;
    const first = e.ghostText(prompt + ' there', {temperature: 0, max_tokens: 200});
    const it = first[Symbol.asyncIterator]();
    const head = await it.next();  // the first call is generating
    const second = e.ghostText(prompt, {temperature: 0});
    const pieces = [];
    for await (const t of second) pieces.push(t);
    const [a, b] = [await first.result, await second.result];
    let rest = '';
    for (let x = await it.next(); !x.done; x = await it.next()) rest += x.value;
    const plain = await e.ask(prompt, {temperature: 0, max_tokens: 24});
    return {a: {outcome: a.outcome, finish: a.finish_reason, tokens: a.usage.completion_tokens,
      streamed: (head.value || '') + rest === a.text},
    b: {outcome: b.outcome, finish: b.finish_reason, tokens: b.usage.completion_tokens, text: b.text,
      joined: pieces.join('') === b.text, pieces: pieces.length},
    plain: plain.text};
  }, {prompt});
  check(g.a.outcome === 'superseded' && g.a.finish === 'abort' && g.a.tokens < 200 && g.a.streamed,
    'ghostText: a second call supersedes the first one in flight (finish_reason abort, outcome superseded)', g.a);
  check(g.b.outcome === 'completed' && g.b.tokens <= 24 && (g.b.finish !== 'length' || g.b.tokens === 24) &&
    g.b.joined && g.b.text === g.plain, 'ghostText: the second completes (max_tokens 24, streamed), the same text as ask()',
  {b: g.b, ask: g.plain});

  // ask: one input and an array (one batch as one task, results in order with index / startedAt / finishedAt,
  // each text the same as the single ask's). An item's own fields win over the shared options (max_tokens).
  const a = await page.evaluate(async ({prompt, tokens}) => {
    const e = window.demo.engine;
    const inputs = [{prompt, max_tokens: tokens}, 'Hi', [{role: 'system', content: 'Be brief.'}, {role: 'user', content: 'Why?'}]];
    const seen = [];
    const many = await e.ask(inputs, {temperature: 0, max_tokens: 6, task: 'page-1', onItem: (r) => seen.push(r.index)});
    const singles = [];
    for (const x of inputs) singles.push(await e.ask(x, {temperature: 0, max_tokens: 6}));
    return {many: many.map((r) => ({index: r.index, text: r.text, task: r.task, startedAt: r.startedAt,
      finishedAt: r.finishedAt, tokens: r.usage.completion_tokens, outcome: r.outcome})),
    singles: singles.map((r) => r.text), seen: seen.sort()};
  }, {prompt, tokens});
  const m = a.many;
  check(m.length === 3 && m.every((r, i) => r.index === i && r.task === 'page-1' && r.outcome === 'completed' &&
    typeof r.startedAt === 'number' && r.startedAt > 0 && r.finishedAt >= r.startedAt) && a.seen.join() === '0,1,2',
  'ask([...]): one batch as one task, results in order with index, startedAt and finishedAt', m);
  check(m[0].text === nativeText && m[0].tokens === tokens && m.every((r, i) => r.text === a.singles[i]),
    'ask([...]): each text equals its single ask (the first, a prompt, the native engine\'s)', {many: m.map((r) => r.text), singles: a.singles});

  // Reformat: a background ask is preemptible; an interactive ask that finds the one row taken preempts it. The
  // victim resolves with its partial text and preempted: true. A normal ask (not opted in) is not preempted.
  const p = await page.evaluate(async ({prompt}) => {
    const e = window.demo.engine;
    const race = async (opts) => {
      const deltas = [];
      let inter = null;
      const victim = await e.ask(prompt, Object.assign({temperature: 0, onDelta: (t) => {
        deltas.push(t);
        if (!inter) inter = e.ask('Hi', {priority: 'interactive', max_tokens: 4, temperature: 0});
      }}, opts));
      const r = await inter;
      return {outcome: victim.outcome, preempted: victim.preempted, finish: victim.finish_reason, text: victim.text,
        tokens: victim.usage.completion_tokens, streamed: deltas.join('') === victim.text, interactive: r.outcome};
    };
    return {bg: await race({background: true, max_tokens: 300}), normal: await race({max_tokens: 24})};
  }, {prompt});
  check(p.bg.preempted && p.bg.outcome === 'preempted' && p.bg.finish === 'abort' && p.bg.text.length > 0 &&
    p.bg.streamed && p.bg.tokens < 300 && p.bg.interactive === 'completed',
  'ask({background}): preempted by an interactive ask, resolves with its partial text and preempted: true', p.bg);
  check(!p.normal.preempted && p.normal.outcome === 'completed' && p.normal.tokens === 24 && p.normal.interactive === 'completed',
    'a normal ask is not preemptible: it completes, the interactive one waits', p.normal);

  // Conversation: the second turn's prompt holds the first turn; a send in flight is superseded by the next and
  // leaves nothing in the history; reset() clears it (the system message stays), so the first turn repeats.
  const c = await page.evaluate(async () => {
    const e = window.demo.engine;
    const conv = e.conversation({system: 'You are brief.', max_tokens: 6, temperature: 0});
    const t1 = conv.send('Hi');
    let p1 = '';
    for await (const t of t1) p1 += t;
    const r1 = await t1.result;
    const r2 = await conv.send('And then?').result;
    const afterTwo = conv.messages;
    const a = conv.send('Wait', {max_tokens: 200});
    await a[Symbol.asyncIterator]().next();
    const b = conv.send('Never mind');
    const [ra, rb] = [await a.result, await b.result];
    const afterSuper = conv.messages.map((x) => x.content);
    await conv.reset();
    const afterReset = conv.messages.length;
    const r3 = await conv.send('Hi').result;
    const u = (r) => ({prompt: r.usage.prompt_tokens, completion: r.usage.completion_tokens,
      cached: r.usage.prompt_tokens_details && r.usage.prompt_tokens_details.cached_tokens});
    return {session: conv.session, r1: Object.assign(u(r1), {text: r1.text, streamed: p1 === r1.text}), r2: u(r2),
      r3: Object.assign(u(r3), {text: r3.text}), afterTwo: afterTwo.map((x) => x.role),
      secondHoldsFirst: afterTwo[2].content === r1.text, ra: ra.outcome, rb: rb.outcome, afterSuper, afterReset};
  });
  check(c.r1.streamed && c.afterTwo.join() === 'system,user,assistant,user,assistant' && c.secondHoldsFirst &&
    c.r2.prompt > c.r1.prompt + c.r1.completion, 'conversation: history kept (the second turn\'s prompt holds the first)', c);
  check(c.ra === 'superseded' && c.rb === 'completed' && c.afterSuper.includes('Never mind') && !c.afterSuper.includes('Wait') &&
    c.afterSuper.length === 7, 'conversation: a send supersedes the reply in flight, which leaves no trace in the history',
  {ra: c.ra, rb: c.rb, messages: c.afterSuper});
  check(c.afterReset === 1 && c.r3.prompt === c.r1.prompt && c.r3.text === c.r1.text,
    'conversation: reset() clears the history (the first turn repeats exactly)', {r1: c.r1, r3: c.r3, afterReset: c.afterReset});
  return {ghost: g, ask: a, preempt: p, conversation: c};
}
