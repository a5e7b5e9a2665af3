% logicpipe kb guard: what stands between a goal (typed, or written by a model) and anything but the
% KB's own predicates and pure builtins. Loaded by engine.pl, in module user like it.
%
% Layer 1, the whitelist (safe_body/3). When the KB loads, every place where its code calls a term it
% did not write (a variable body goal, call/N, a meta-argument of a builtin, a clause it asserts, a
% format directive ~@) is rewritten into a wrapper that checks the term when it runs. A goal from
% outside, and every term such a wrapper is about to call, is checked in mode `checked`: each goal in it
% must be a KB predicate, a percept or an allowed builtin. Which arguments of a builtin are goals is read
% from SWI-Prolog's own meta_predicate declarations (0..9, ^, // and :), not from a table kept here.
%
% Layer 2, library(sandbox) (sandbox_check/1), the analysis SWISH runs anonymous users' code under.
% The same goal and the same terms must also pass safe_goal/1, which walks the KB's own clauses too: a
% KB rule with side effects (files, shell, network, halt) is refused unless the command named that
% builtin with --allow. The wrappers are declared safe to it, since each checks again when it runs.
%
% Limits cannot be caught: catch/3 and catch_with_backtrace/3 are rewritten to re-throw the engine's own
% exceptions (time, inferences, memory, a refusal), and an exception hook notes any limit that fired
% (engine.pl's bounded/3 then reports the goal unknown, whatever it did afterwards).

:- use_module(library(sandbox)).
:- use_module(library(prolog_format), [format_types/2]).
:- use_module(library(predicate_options), []).
:- use_module(library(dialect/swi/syspred_options), []).

% library(sandbox) loads library(apply_macros), whose global goal expansion would compile the KB's
% maplist/forall calls into helper predicates: the KB is compiled as plain SWI-Prolog compiles it.
:- forall(( member(H, [system:goal_expansion(_, _), system:goal_expansion(_, _, _, _)]),
            clause(H, Body, Ref),
            \+ \+ ( sub_term(S, Body), compound(S), functor(S, expand_apply, _) ) ),
          erase(Ref)).

:- dynamic sandbox_general/3.

% --- layer 1: the whitelist -------------------------------------------------------------------------

% safe_body(+Mode, +Goal, -Safe): Goal with every call of a term it did not write made a checked call.
% Mode trusted: the KB's own code (its literal goals run as written). Mode checked: a goal from
% outside, or a term reaching a meta-call at run time: every literal goal must be allowed too.
safe_body(_, G, user:checked(G)) :- var(G), !.
safe_body(trusted, G, G) :-                     % already rewritten (asserted by a directive while loading)
    G = M:W, M == user, nonvar(W), wrapper(W),
    \+ prolog_load_context(source, _), !.        % a clause read from the KB's source never is
safe_body(Mode, M:G, Safe) :- !,
    (   var(M) -> Safe = user:checked(M:G)                     % checked again once M is known
    ;   M == kb -> safe_body(Mode, G, Safe)
    ;   Mode == trusted, nonvar(G) -> in_module(M, G, G1), safe_body(trusted, G1, SafeG0),
                                      qualified_meta(M, G1, SafeG0, SafeG), qualified(M, SafeG, Safe)
    ;   Mode == trusted -> Safe = user:checked(M:G)            % refused when it runs: M is not kb
    ;   throw(refused(whitelist, M:G))
    ).
safe_body(Mode, (A, B), (SA, SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, (A ; B), (SA ; SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, (A -> B), (SA -> SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, (A *-> B), (SA *-> SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, \+ A, \+ SA) :- !, safe_body(Mode, A, SA).
safe_body(_, !, !) :- !.
safe_body(Mode, G, Safe) :-
    (   callable(G) -> true ; throw(error(type_error(callable, G), _)) ),
    functor(G, N, A),
    (   Mode == checked, \+ allowed(N, A) -> throw(refused(whitelist, N/A)) ; true ),
    (   Mode == trusted, engine_pred(N, A), \+ own_loading(N, A)
    ->  Safe = user:checked(G)                                 % refused when it runs, unless the KB's own
    ;   Mode == trusted, ( out_of_bounds(N, A) ; widened(N, A) ), \+ kb_local(N, A)
    ->  Safe = user:checked(G)                                 % refused when it runs
    ;   safe_call(Mode, G, N, A, Safe)
    ).

% engine_pred(+N, +A): the engine's own predicate (the wrappers, their helpers, the engine's state and
% hooks: everything defined in module user), which a KB name reaches when the KB does not define it
% (kb, and any module a KB names, inherits from user). The wrappers call what the rewriting checked
% without checking it again, so only the rewriting may produce them: written in the KB's code (as
% user:lp_dcg_body(...), lp_recover(...), call(user:lp_lambda, ...), ...), such a goal becomes a checked
% call, which runs only a predicate the KB defines itself under that name and refuses the engine's.
engine_pred(N, A) :-
    current_predicate(user:N/A),
    functor(H, N, A),
    predicate_property(user:H, implementation_module(user)).

% own_loading(+N, +A): a clause of the KB's source, read into the module M its file loads into, that
% calls N/A there, where M itself defines N/A (already, or the clause is one of N/A's own): the call
% stays as written (a recursive KB predicate that shares a name with one of the engine's is still
% tabled, and its depth is its own). Not when anything in the clause names another module: a goal
% under Q:... is called in Q, where the name reaches the engine's. M's own N/A cannot be undefined
% later: library(sandbox) refuses abolish/1,2.
own_loading(N, A) :-
    prolog_load_context(module, M), M \== user,
    prolog_load_context(term, T), nonvar(T),
    \+ ( sub_term(S, T), compound(S), S = Q:_, Q \== M ),
    (   clause_head(T, N, A) -> true
    ;   current_predicate(M:N/A), functor(H, N, A), predicate_property(M:H, implementation_module(M))
    ).

clause_head((H :- _), N, A) :- callable(H), functor(H, N, A).
clause_head((H0 --> _), N, A) :-
    callable(H0), ( H0 = (H, _) -> true ; H = H0 ), callable(H), functor(H, N, A0), A is A0 + 2.

% qualified_meta(+M, +G, +SafeG0, -SafeG): M:G in the KB's code, where G is a meta-predicate of M that
% the KB's module does not see (dcg_high_order:sequence(E, L, S0, S) without importing it): its
% meta-arguments are checked by M's own declaration, even where the KB defines a predicate of that name.
% As in SWI-Prolog, an unqualified meta-argument of M:G is called in M (so the check refuses it unless M
% is the KB's: plain swipl raises an existence error for the KB's closure there).
qualified_meta(M, G, SafeG0, SafeG) :-
    SafeG0 == G, library_meta(M, G, Spec), !,
    G =.. [N|Args], Spec =.. [_|Specs],
    maplist(safe_arg(trusted), Specs, Args, SafeArgs),
    SafeG =.. [N|SafeArgs].
qualified_meta(_, _, SafeG, SafeG).

library_meta(M, G, Spec) :-
    atom(M), M \== kb, M \== user, current_module(M), callable(G), G \= _:_,
    predicate_property(M:G, meta_predicate(Spec)).

% in_module(+M, +G, -G1): G's unqualified goal and closure arguments qualified with M, where SWI-Prolog
% calls them when G is called as M:G.
in_module(M, G, G1) :-
    library_meta(M, G, Spec), !,
    G =.. [N|Args], Spec =.. [_|Specs],
    maplist(arg_in_module(M), Specs, Args, Args1),
    G1 =.. [N|Args1].
in_module(_, G, G).

arg_in_module(M, Spec, A, M:A) :- integer(Spec), \+ ( nonvar(A), A = _:_ ), !.
arg_in_module(_, _, A, A).

% M:user:checked(G) is user:checked(G) (library(sandbox) reads only one qualification in a meta-argument).
qualified(_, Safe, Safe) :- nonvar(Safe), Safe = user:_, !.
qualified(M, SafeG, M:SafeG).

% out_of_bounds(+N, +A): builtins library(sandbox) lets a KB rule call that would reach past the
% sandbox or past the goal: loading a file at run time (it would not be rewritten: use_module of a
% module that calls shell/1), a goal undo/1 runs after the goal's isolation ended, abolishing tables
% before the engine looks for undefined answers in them, and translating a message a goal handed in
% (which runs format's ~@ in it). A KB rule calling one is refused when it runs (a goal may not call
% them anyway).
out_of_bounds(use_module, 1).
out_of_bounds(use_module, 2).
out_of_bounds(ensure_loaded, 1).
out_of_bounds(consult, 1).
out_of_bounds(load_files, 1).
out_of_bounds(load_files, 2).
out_of_bounds(reexport, 1).
out_of_bounds(reexport, 2).
out_of_bounds(autoload, 1).
out_of_bounds(autoload, 2).
out_of_bounds('[|]', 2).
out_of_bounds(undo, 1).
out_of_bounds(abolish_all_tables, 0).
out_of_bounds(abolish_private_tables, 0).
out_of_bounds(abolish_shared_tables, 0).
out_of_bounds(abolish_table_subgoals, 1).
out_of_bounds(abolish_module_tables, 1).
out_of_bounds(abolish_nonincremental_tables, 0).
out_of_bounds(abolish_nonincremental_tables, 1).
out_of_bounds(message_to_string, 2).
out_of_bounds(put_attr, 3).          % an attribute of module freeze calls its goal when bound, unchecked
out_of_bounds(put_attrs, 2).
out_of_bounds(get_attr, 3).          % the attribute itself, not a copy: setarg/3 could put a goal in it
out_of_bounds(get_attrs, 2).
out_of_bounds(translate_message, 3).
out_of_bounds(message_to_codes, 3).

% widened(+N, +A): a builtin that a library the KB loaded declared safe for library(sandbox) (library
% (pengines_io) makes write_term/2 safe, whose portray_goal option calls a goal): it would widen what
% the KB's rules may run. The declarations made before the KB loaded are the engine's (sandbox_before/1).
:- dynamic sandbox_before/1.
widened(N, A) :-
    functor(H, N, A),
    (   clause(sandbox:safe_primitive(system:H), _, Ref) ; clause(sandbox:safe_meta(system:H, _), _, Ref) ),
    \+ sandbox_before(Ref), !.

allowed(N, A) :- kb_pred(N, A), !.
allowed(N, A) :- percept_pred(N, A), !.
allowed(N, A) :- extra_allowed(N, A), !.
allowed(N, A) :- allowed_builtin(N, A).

:- dynamic extra_allowed/2.   % percepts a goal brings, while it is checked before it runs

% safe_call(+Mode, +G, +N, +A, -Safe): one call that is not a control construct.
safe_call(Mode, G, _, _, Safe) :-                          % catch/3, catch_with_backtrace/3
    catch_goal(G, Goal, Catcher, Recovery, Rebuild), !,
    safe_body(Mode, Goal, SafeGoal),
    safe_body(Mode, Recovery, SafeRecovery),
    call(Rebuild, SafeGoal, Ball, user:lp_recover(Ball, Catcher, SafeRecovery), Safe).
safe_call(Mode, G, _, _, Safe) :-                          % assert/1,2, asserta/1,2, assertz/1,2
    assert_goal(G, How, Clause, Rest), !,
    (   Mode == trusted, literal_clause(Clause, Literal)
    ->  (   Literal = (_ :- _) -> Safe = user:literal_assert(How, Literal, Rest) ; Safe =.. [How, Literal|Rest] )
    ;   Safe = user:safe_assert(How, Clause, Rest)
    ).
safe_call(Mode, G, _, _, (Safe, user:lp_limit_result(Result0-Result))) :-   % a KB's own nested limit
    limited_goal(G, Goal, Rebuild, Result), !,                % called with a fresh result, noted, then
    safe_body(Mode, Goal, SafeGoal),                          % unified: a result the KB bound in advance
    call(Rebuild, SafeGoal, Result0, Safe).                   % does not hide that the limit cut it short
safe_call(_, set_prolog_flag(F, V), _, _, user:lp_set_flag(F, V)) :- !.
safe_call(Mode, tnot(G), _, _, Safe) :- !,                  % tnot/1 needs the tabled goal itself
    (   nonvar(G), safe_body(Mode, G, SafeG), SafeG == G -> Safe = tnot(G) ; Safe = user:lp_tnot(G) ).
safe_call(Mode, apply(C, Args), _, _, Safe) :- !,           % its closure is not declared a meta-argument
    (   Mode == trusted, nonvar(C), is_list(Args)
    ->  length(Args, N), safe_closure(N, C, SafeC), Safe = apply(SafeC, Args)
    ;   Safe = user:lp_apply(C, Args)
    ).
safe_call(Mode, G, '>>', A, Safe) :- A > 2, !,             % library(yall) declares the body of a lambda
    G =.. ['>>', Params, Body|Extra],                        % called with arguments `:`, not a goal: it
    (   Mode == trusted, nonvar(Body)                         % is one, rewritten as any lambda's
    ->  safe_lambda(Params>>Body, Params>>SafeBody), Safe =.. ['>>', Params, SafeBody|Extra]
    ;   Safe = user:lp_apply(Params>>Body, Extra)             % refused when it runs: a goal may not call >>
    ).
safe_call(Mode, G, N, A, user:lp_options(Safe)) :-        % write options that call a goal or a hook
    options_arg(N, A, _), \+ kb_local(N, A), !,               % (checked when they are known, as it runs)
    (   meta_spec(G, Spec)
    ->  G =.. [N|Args], Spec =.. [_|Specs], maplist(safe_arg(Mode), Specs, Args, SafeArgs), Safe =.. [N|SafeArgs]
    ;   Safe = G
    ).
safe_call(_, G, N, A, user:lp_global(G)) :-                % the engine's own global variables are hidden
    global_reader(N, A), \+ kb_local(N, A), !.
safe_call(Mode, G, N, A, Safe) :-
    \+ kb_local(N, A),
    meta_spec(G, Spec),
    !,
    G =.. [N|Args], Spec =.. [_|Specs],
    maplist(safe_arg(Mode), Specs, Args, SafeArgs),
    Safe0 =.. [N|SafeArgs],
    (   format_goal(Safe0, _, _, _) -> safe_format(Mode, Safe0, Safe)
    ;   maplist(settled_colon, Specs, SafeArgs), \+ names_engine_pred(Specs, SafeArgs) -> Safe = Safe0
    ;   Safe = user:lp_colon(Safe0)                            % a module-sensitive argument from outside
    ).
safe_call(_, G, _, _, G).

% meta_spec(+G, -Spec): G's meta_predicate declaration as seen where the KB's code calls it: in the
% module a KB file loads into (kb, or a module of its own), which sees the libraries the KB imported
% (library(dcg/high_order)'s sequence//2, library(yall)'s >>, ...), else in user (the engine's imports
% and autoloading). A library meta-predicate is checked like a builtin only if its declaration is found.
meta_spec(G, Spec) :-
    (   prolog_load_context(module, M), M \== user -> true ; M = kb ),
    predicate_property(M:G, meta_predicate(Spec)), !.
meta_spec(G, Spec) :-
    predicate_property(user:G, meta_predicate(Spec)).

% Defined by the KB itself (its meta-arguments are then the KB's business, checked where it calls them).
kb_local(N, A) :- current_predicate(kb:N/A), functor(H, N, A), \+ predicate_property(kb:H, imported_from(_)).

limited_goal(call_with_depth_limit(G, L, R), G, rebuild_limited(call_with_depth_limit, L), R).
limited_goal(call_with_inference_limit(G, L, R), G, rebuild_limited(call_with_inference_limit, L), R).

rebuild_limited(Name, L, G, R, Safe) :- Safe =.. [Name, G, L, R].

catch_goal(catch(G, C, R), G, C, R, rebuild_catch(catch)).
catch_goal(catch_with_backtrace(G, C, R), G, C, R, rebuild_catch(catch_with_backtrace)).

rebuild_catch(Name, G, Ball, Recovery, Safe) :- Safe =.. [Name, G, Ball, Recovery].

assert_goal(G, How, Clause, Rest) :-
    compound(G), G =.. [How, Clause|Rest],
    memberchk(How, [assert, asserta, assertz]), length(Rest, L), L =< 1.

% literal_clause(+Clause, -Safe): a clause whose head and body are written out in the KB's source: its
% body is rewritten now, as the KB's own code (a variable inside it is still checked when it runs). A
% fact whose head is written out asserts data only.
literal_clause(Clause, Safe) :-
    nonvar(Clause), Clause = (H :- B), !,
    nonvar(H), H \= _:_, nonvar(B),
    safe_body(trusted, B, SafeB),
    Safe = (H :- SafeB).
literal_clause(Clause, Clause) :-
    nonvar(Clause), Clause \= _:_.

safe_arg(Mode, 0, G, Safe) :- !, safe_body(Mode, G, Safe).
safe_arg(Mode, ^, G, Safe) :- !, safe_carets(Mode, G, Safe).
safe_arg(Mode, //, G, Safe) :- !, safe_grammar(Mode, G, Safe).
safe_arg(Mode, N, C, Safe) :- integer(N), !,
    (   unknown_closure(C) -> Safe = user:lp_closure(C)
    ;   Mode == checked -> Safe = user:lp_closure(C)
    ;   safe_closure(N, C, Safe)
    ).
safe_arg(_, _, A, A).

% A closure (or its module) unbound until it runs: checked then.
unknown_closure(C) :- var(C), !.
unknown_closure(M:C) :- ( var(M) -> true ; unknown_closure(C) ).

safe_carets(Mode, G, Safe) :- nonvar(G), G = V^Inner, !, Safe = V^SafeInner, safe_carets(Mode, Inner, SafeInner).
safe_carets(Mode, G, Safe) :- safe_body(Mode, G, Safe).

% A closure written in the KB's code (maplist(foo, L), foldl(call(G), ...)): the goal it makes once its
% arguments are added is rewritten like any body; if that changes it, the closure becomes a lambda over
% the rewritten goal that shares the closure's own variables (a term from outside bound to them later
% is checked when the lambda runs).
safe_closure(_, Free/Lambda, Free/Safe) :- nonvar(Lambda), Lambda = (_>>_), !, safe_lambda(Lambda, Safe).
safe_closure(_, Lambda, Safe) :- nonvar(Lambda), Lambda = (_>>_), !, safe_lambda(Lambda, Safe).
safe_closure(_, C, C) :- \+ callable(C), !.                  % not a closure: the call says so
safe_closure(N, C, Safe) :-
    length(Extra, N),
    closure_goal(C, Extra, G),
    safe_body(trusted, G, SafeG),
    (   SafeG == G -> Safe = C
    ;   term_variables(C, Vars), Free =.. [v|Vars], Safe = user:lp_lambda(Free, Extra, SafeG)
    ).

% A library(yall) lambda in the KB's code: its body may call a term it was given, like any body.
safe_lambda(Params>>Body, Params>>Safe) :- safe_body(trusted, Body, Safe).

% A grammar body (phrase/2,3): translated as a DCG rule's body is, the goal checked like any body.
safe_grammar(_, G, user:lp_dcg(G)) :- var(G), !.
safe_grammar(Mode, G, Safe) :-
    grammar_goal(G, S0, S, Body),
    safe_body(Mode, Body, SafeBody),
    (   Mode == trusted, SafeBody == Body -> Safe = G
    ;   Safe = user:lp_dcg_body(S0, S, SafeBody)
    ).

% grammar_goal(+Body, ?S0, ?S, -Goal): the goal a DCG body is translated to, over the list S0 to S.
grammar_goal(Body, S0, S, Goal) :-
    dcg_translate_rule((lp_dcg --> Body), (Head :- Goal)),
    Head =.. [_, S0, S].

% A `:` argument needs no run-time check when its module is settled: written out, and not Var:Term.
settled_colon(:, A) :- !, nonvar(A), ( A = M:_ -> atom(M) ; true ).
settled_colon(_, _).

% format/2,3 and debug/3: the arguments that a ~@ directive calls are goals.
format_goal(format(F, Args), F, Args, format(F)).
format_goal(format(Out, F, Args), F, Args, format(Out, F)).
format_goal(debug(Topic, F, Args), F, Args, debug(Topic, F)).

safe_format(Mode, G, Safe) :-
    format_goal(G, F, Args, Partial),
    (   ground(F), is_list(Args), format_called(F, Args, Called),
        \+ ( nth1(I, Called, options), nth1(I, Args, Options), \+ settled_options(Options) )
    ->  maplist(safe_format_arg(Mode), Called, Args, SafeArgs),
        closure_goal(Partial, [SafeArgs], Safe)
    ;   Safe = user:lp_format(G)                               % the format is known only when it runs
    ).

format_called(F, Args, Called) :-
    catch(format_types(F, Types), _, fail),
    length(Types, N), length(Args, N),
    maplist(called_type, Types, Called).

called_type(callable, true) :- !.
called_type(list, options) :- !.               % ~W: its second argument is write_term/2's options
called_type(_, false).

safe_format_arg(Mode, true, A, Safe) :- !, safe_body(Mode, A, Safe).
safe_format_arg(_, options, A, Safe) :- !, safe_options(A, Safe).
safe_format_arg(_, false, A, A).

wrapper(checked(_)).
wrapper(W) :- compound(W), compound_name_arity(W, Name, _),
    memberchk(Name, [lp_closure, lp_lambda, lp_dcg, lp_dcg_body, lp_recover, lp_colon, lp_format, lp_apply,
                     safe_assert, literal_assert, lp_limit_result, lp_tnot, lp_set_flag, lp_options, lp_global,
                     lp_option_goal]).

% --- the wrappers: each checks, by both layers, what it is about to call ------------------------------

user:checked(G) :- called_goal(G), checked_body(G, Safe), call(kb:Safe).

% A goal still unbound when it is called (or its module) is an instantiation error, as in call/1.
called_goal(G) :- var(G), !, throw(error(instantiation_error, _)).
called_goal(M:G) :- !, ( var(M) -> throw(error(instantiation_error, _)) ; called_goal(G) ).
called_goal(_).

% checked_body(+G, -Safe): G from outside, as it may run; a refusal by either layer is thrown.
checked_body(G, Safe) :- safe_body(checked, G, Safe), sandbox_check(G).

user:lp_closure(C, A1) :- closure_call(C, [A1]).
user:lp_closure(C, A1, A2) :- closure_call(C, [A1, A2]).
user:lp_closure(C, A1, A2, A3) :- closure_call(C, [A1, A2, A3]).
user:lp_closure(C, A1, A2, A3, A4) :- closure_call(C, [A1, A2, A3, A4]).
user:lp_closure(C, A1, A2, A3, A4, A5) :- closure_call(C, [A1, A2, A3, A4, A5]).
user:lp_closure(C, A1, A2, A3, A4, A5, A6) :- closure_call(C, [A1, A2, A3, A4, A5, A6]).
user:lp_closure(C, A1, A2, A3, A4, A5, A6, A7) :- closure_call(C, [A1, A2, A3, A4, A5, A6, A7]).

closure_call(C, Args) :- closure_goal(C, Args, G), user:checked(G).

closure_goal(C, _, _) :- var(C), !, throw(error(instantiation_error, _)).
closure_goal(M:C, Extra, M:G) :- !, closure_goal(C, Extra, G).
closure_goal(C, Extra, G) :-
    (   callable(C) -> true ; throw(error(type_error(callable, C), _)) ),
    C =.. L0, append(L0, Extra, L), G =.. L.

% A lambda made by safe_closure/3: a fresh copy of its parameters and goal per call, sharing Free.
user:lp_lambda(F, P, G, A1) :- lambda_call(F, P, G, [A1]).
user:lp_lambda(F, P, G, A1, A2) :- lambda_call(F, P, G, [A1, A2]).
user:lp_lambda(F, P, G, A1, A2, A3) :- lambda_call(F, P, G, [A1, A2, A3]).
user:lp_lambda(F, P, G, A1, A2, A3, A4) :- lambda_call(F, P, G, [A1, A2, A3, A4]).
user:lp_lambda(F, P, G, A1, A2, A3, A4, A5) :- lambda_call(F, P, G, [A1, A2, A3, A4, A5]).
user:lp_lambda(F, P, G, A1, A2, A3, A4, A5, A6) :- lambda_call(F, P, G, [A1, A2, A3, A4, A5, A6]).
user:lp_lambda(F, P, G, A1, A2, A3, A4, A5, A6, A7) :- lambda_call(F, P, G, [A1, A2, A3, A4, A5, A6, A7]).

lambda_call(Free, Params, Goal, Args) :-
    copy_term(Free-Params-Goal, Free1-Params1-Goal1),
    Free1 = Free, Params1 = Args,
    call(kb:Goal1).

user:lp_apply(C, Args) :- closure_goal(C, Args, G), user:checked(G).

% A grammar body known only when it runs (phrase(G, L) with G from outside).
user:lp_dcg(G, S0, S) :-
    (   var(G) -> throw(error(instantiation_error, _)) ; true ),
    grammar_goal(G, S0, S, Body),
    user:checked(Body).

user:lp_dcg_body(S0, S, Body, S0, S) :- call(kb:Body).

% The recovery of a rewritten catch/3: the engine's own exceptions go on up, whatever the catcher.
% set_prolog_flag/2 in a KB rule: a tabling limit it sets is noted, so that the search is unknown even
% if the rule lifts the limit again before the engine looks (answers a limit with action `fail` dropped
% leave no trace); `suspend` would start a nested toplevel on the engine's input.
user:lp_set_flag(F, V) :-
    (   atom(F), sub_atom(F, 0, _, _, max_), ( sub_atom(F, _, _, 0, '_action') -> V \== suspend ; true )
    ->  nb_setval(lp_table_limit, true)
    ;   atom(F), sub_atom(F, 0, _, _, max_) -> throw(error(permission_error(modify, flag, F-V), _))
    ;   true
    ),
    sandbox_check(set_prolog_flag(F, V)),      % the flags library(sandbox) lets code set, as before
    set_prolog_flag(F, V).

% tnot/1 of a goal the KB's code did not write: checked, then tabled negation of that goal itself (a
% wrapper around it would not be tabled).
user:lp_tnot(G) :- called_goal(G), checked_body(G, Safe), tnot(kb:Safe).

user:lp_recover(Ball, Catcher, Recovery) :-
    (   engine_ball(Ball) -> throw(Ball)
    ;   Ball = Catcher -> call(kb:Recovery)
    ;   throw(Ball)
    ).

% A limit the KB set itself that cut its search short: noted like the engine's own (the result of a
% search it truncated is no answer). Got is what the limited call returned, Result what the KB's code
% expects there (unified only now, so that a result bound in advance still notes the limit).
user:lp_limit_result(Got-Result) :-
    (   memberchk(Got, [depth_limit_exceeded, inference_limit_exceeded]), nb_current(lp_fired, none)
    ->  nb_setval(lp_fired, Got)
    ;   true
    ),
    Result = Got.

engine_ball(Ball) :- var(Ball), !, fail.
engine_ball(time_limit_exceeded).
engine_ball(inference_limit_exceeded).
engine_ball(error(resource_error(_), _)).
engine_ball(refused(_, _)).
engine_ball('$aborted').

% A clause the KB asserts that was not written out in its source: it goes into kb, only for one of the
% KB's own dynamic predicates, and its body may call only what a goal may call (both layers).
user:safe_assert(How, Clause0, Rest) :-
    asserted_clause(Clause0, Clause),
    Goal =.. [How, kb:Clause|Rest],
    call(Goal).

% A clause written out in the KB's source, rewritten at load: library(sandbox) still sees what its body
% calls (it refuses every clause with a body as such).
user:literal_assert(How, (H :- B), Rest) :-
    sandbox_check(B),
    Goal =.. [How, kb:(H :- B)|Rest],
    call(Goal).

asserted_clause(C, _) :- var(C), !, throw(error(instantiation_error, _)).
asserted_clause(M:C, Safe) :- !,
    (   M == kb -> asserted_clause(C, Safe) ; throw(refused(whitelist, assert(M:C))) ).
asserted_clause((H :- B), (H :- SafeB)) :- !,
    asserted_head(H),
    (   var(B) -> SafeB = user:checked(B) ; checked_body(B, SafeB) ).
asserted_clause(H, H) :- asserted_head(H).

asserted_head(H) :- var(H), !, throw(error(instantiation_error, _)).
asserted_head(H) :-
    (   callable(H) -> true ; throw(error(type_error(callable, H), _)) ),
    functor(H, N, A),
    (   kb_pred(N, A), predicate_property(kb:H, dynamic) -> true
    ;   percept_pred(N, A) -> true
    ;   throw(refused(whitelist, assert(N/A)))
    ).

% A builtin with a module-sensitive argument (retract/1, clause/2, abolish/1, ...) whose argument came
% from outside: it may name only the KB's module.
user:lp_colon(G) :-
    functor(G, N, A), functor(Spec0, N, A),
    meta_spec(Spec0, Spec),
    forall(( arg(I, Spec, (:)), arg(I, G, Arg) ), kb_module_term(Arg)),
    Spec =.. [_|Specs], G =.. [_|Args],
    \+ names_engine_pred(Specs, Args),          % as in plain swipl, where the engine is not: no such predicate
    sandbox_check(G),
    call(kb:G).

% names_engine_pred(+Specs, +Args): a module-sensitive argument (clause/2's head, current_predicate/1's
% name, ...) names one of the engine's own predicates in user (its facts, its wrappers), which kb inherits
% and which the KB does not define itself. Such an argument is refused at rewriting (it becomes a
% lp_colon/1 call) and fails when it runs: the engine's facts read as if they were not there.
names_engine_pred(Specs, Args) :-
    nth1(I, Specs, (:)), nth1(I, Args, Arg),
    strip_module(Arg, M, Plain), ( var(M) ; M == kb ; M == user ),
    (   callable(Plain), \+ Plain = _/_, \+ Plain = _//_ -> functor(Plain, N, A)
    ;   nonvar(Plain), ( Plain = N/A ; Plain = N//A0, integer(A0), A is A0 + 2 )
    ),
    atom(N), integer(A),
    engine_pred(N, A), \+ kb_local(N, A), !.

kb_module_term(T) :- var(T), !.
kb_module_term(M:T) :- !, ( M == kb -> kb_module_term(T) ; throw(refused(whitelist, M:T)) ).
kb_module_term(_).

% format/2,3 or debug/3 whose format or arguments are known only when it runs.
user:lp_format(G) :-
    format_goal(G, F, Args0, Partial),
    (   is_list(Args0) -> Args = Args0 ; Args = [Args0] ),
    (   format_called(F, Args, Called)
    ->  maplist(safe_format_arg(checked), Called, Args, SafeArgs),
        closure_goal(Partial, [Args], Plain), sandbox_check(Plain),
        closure_goal(Partial, [SafeArgs], Safe),
        call(kb:Safe)
    ;   throw(refused(whitelist, G))                           % a format its reader cannot read
    ).

% --- goals in options -----------------------------------------------------------------------------
% A write option may hold a goal that SWI-Prolog calls from C for each term it writes (portray_goal(G)),
% or switch on a hook (portray(true) calls portray/1). Neither meta_predicate declarations nor library
% (sandbox) see them. Which options do is read from SWI-Prolog's own option declarations
% (library(dialect/swi/syspred_options), through pass_to/2): an option of type callable is a goal, an
% option whose name or one of whose values is `portray` switches on a hook. Which builtins take them is
% read from the same declarations, plus those SWI-Prolog passes write options to without declaring it
% (undeclared_options/3) and format/2,3's ~W (library(prolog_format)'s `list` argument type).

:- dynamic option_call/3, options_arg/3.

% option_call(?Name, ?Kind, ?Value): the option Name(Value) calls something. Kind is goal(Extra) (a
% closure called with Extra more arguments) or hook.
derive_option_calls :-
    retractall(option_call(_, _, _)), retractall(options_arg(_, _, _)),
    forall(( declared_option(system:write_term/3, O), option_kind(O, Name, Kind, Value) ),
           assertz(option_call(Name, Kind, Value))),
    forall(( predicate_options:option_decl(H, M, I), functor(H, N, A),
             declared_option(M:N/A, O), option_kind(O, _, _, _) ),
           ( options_arg(N, A, I) -> true ; assertz(options_arg(N, A, I)) )),
    forall(( undeclared_options(N, A, I), \+ options_arg(N, A, I) ), assertz(options_arg(N, A, I))).

% declared_option(+PI, -Option): Name(Type) as declared, pass_to/2 followed.
declared_option(PI, O) :- declared_option(PI, [], O).
declared_option(M:N/A, Seen, O) :-
    \+ memberchk(M:N/A, Seen),
    functor(H, N, A),
    clause(M:'$pred_option'(H, Decl, _, _), _),
    (   Decl = pass_to(M2:N2/A2, _) -> declared_option(M2:N2/A2, [M:N/A|Seen], O)
    ;   O = Decl
    ).

option_kind(O, Name, goal(Extra), _) :-
    O =.. [Name, Type], callable_type(Type, Extra), !.
option_kind(O, Name, hook, true) :- O =.. [Name, boolean], Name == portray, !.
option_kind(O, Name, hook, portray) :- O =.. [Name, oneof(Values)], memberchk(portray, Values).

callable_type(callable, 0).
callable_type(callable+N, N).

% Builtins that pass an options argument on to write_term/3 without a predicate_options declaration.
undeclared_options(portray_clause, 3, 3).
undeclared_options(print_term, 2, 2).       % library(pprint)

:- derive_option_calls.

% safe_options(+Options, -Safe): a write options list as it may run. A goal in an option is called
% through lp_option_goal, which checks it as a goal from outside (both layers); portray(true) stays (it
% calls user:portray/1, which no KB clause may define and no rule may assert: hooks.pl, safe_assert); the
% other hook values (attributes(portray), blobs(portray) call modules' portray hooks) are refused.
safe_options(Options, Options) :- var(Options), !.       % the builtin raises the instantiation error
safe_options([], []) :- !.
safe_options([O|Os], [S|Ss]) :- !, safe_option(O, S), safe_options(Os, Ss).
safe_options(Options, Options).                          % not a list: the builtin raises its error

safe_option(O, O) :- var(O), !, throw(error(instantiation_error, _)).
safe_option(O, Safe) :-
    compound(O), compound_name_arguments(O, Name, [Value]), option_call(Name, Kind, HookValue), !,
    (   Kind = goal(Extra)
    ->  (   var(Value) -> throw(error(instantiation_error, _)) ; true ),
        Safe =.. [Name, user:lp_option_goal(Extra, Value)]
    ;   Value \== HookValue -> Safe = O
    ;   Name == portray -> Safe = O
    ;   throw(refused(whitelist, O))
    ).
safe_option(O, O).

% Options written out in full: what each calls is known now.
settled_options(Options) :-
    is_list(Options),
    forall(member(O, Options), ( nonvar(O), \+ ( compound(O), O =.. [Name, V], option_call(Name, goal(_), _), var(V) ) )).

% Printing from a KB rule goes to the current output, which is the engine's standard error while a goal
% runs (engine.pl main/0; Python keeps only a bounded tail of it). These are not declared safe by
% library(sandbox), which cannot know where the output goes; the write options are checked above.
sandbox:safe_primitive(system:write(_)).
sandbox:safe_primitive(system:writeln(_)).
sandbox:safe_primitive(system:writeq(_)).
sandbox:safe_primitive(system:print(_)).
sandbox:safe_primitive(system:write_canonical(_)).
sandbox:safe_primitive(system:write_term(_, _)).
sandbox:safe_primitive(system:nl).
sandbox:safe_primitive(system:tab(_)).
sandbox:safe_primitive(system:put_char(_)).
sandbox:safe_primitive(system:write_length(_, _, _)).   % writes nothing: measures

% A builtin with write options, known only when it runs.
user:lp_options(G) :-
    functor(G, N, A), options_arg(N, A, I), !,
    G =.. [_|Args0], nth1(I, Args0, Options, Rest), safe_options(Options, SafeOptions),
    nth1(I, Args, SafeOptions, Rest), G1 =.. [N|Args],
    sandbox_check(G),
    call(kb:G1).

% portray_goal(G) as it runs: G called with the term and the options, checked like a goal from outside.
user:lp_option_goal(0, G) :- user:checked(G).
user:lp_option_goal(1, C, A1) :- closure_call(C, [A1]).
user:lp_option_goal(2, C, A1, A2) :- closure_call(C, [A1, A2]).

% --- the engine's global variables ----------------------------------------------------------------
% The engine keeps a few notes in global variables (engine_global/1). A KB rule may read global variables
% (library(sandbox) allows nb_getval/2, b_getval/2, nb_current/2): those of the engine read as unset, as
% in plain swipl, so no answer depends on the engine's state or the goal before.

global_reader(nb_getval, 2).
global_reader(b_getval, 2).
global_reader(nb_current, 2).

engine_global(lp_fired).
engine_global(lp_nodes).
engine_global(lp_table_limit).

user:lp_global(G) :-
    G =.. [N, Key, Value],
    (   N == nb_current
    ->  nb_current(Key, Value), \+ engine_global(Key)
    ;   atom(Key), engine_global(Key)
    ->  throw(error(existence_error(variable, Key), context(system:N/2, _)))
    ;   call(G)
    ).

% --- layer 2: library(sandbox) ----------------------------------------------------------------------

% sandbox_check(+G): G (called in kb) passes library(sandbox)'s safe_goal/1, or refused(sandbox, E) is
% thrown. A predicate whose most general call is safe is remembered as safe (sandbox itself proves the
% general form first and relies on it the same way). The analysis binds nothing in G: safe_goal/1
% unifies as it walks (an unbound module with kb, in M:fact(0)), and G is the goal that then runs.
sandbox_check(G) :- \+ \+ sandbox_walk(G).

sandbox_walk(G) :- var(G), !.
sandbox_walk(G) :-                        % library(sandbox) checks each part of these on its own too
    control(G, Parts), !,
    maplist(sandbox_walk, Parts).
sandbox_walk(G) :-
    general_safe(G), !.
sandbox_walk(G) :-
    sandbox_goal(G, [], Declared),
    forget_declared(Declared).

% A KB predicate that does not exist (yet) stops library(sandbox)'s walk with an existence error, leaving
% what comes after it unexamined. It is declared dynamic (no clauses: nothing to run) for the walk only,
% and the walk is repeated; the call itself still raises the existence error, as in plain SWI-Prolog.
sandbox_goal(G, Declared0, Declared) :-
    catch(safe_goal(kb:G), E, true),
    (   var(E) -> Declared = Declared0
    ;   E = error(existence_error(procedure, PI), _), missing_kb_predicate(PI, N/A),
        \+ memberchk(N/A, Declared0), length(Declared0, L), L < 100
    ->  dynamic(kb:N/A),
        sandbox_goal(G, [N/A|Declared0], Declared)
    ;   forget_declared(Declared0),
        throw(refused(sandbox, E))
    ).

missing_kb_predicate(M:G, N/A) :- M == kb, callable(G), functor(G, N, A).   % sandbox names the goal

forget_declared(Declared) :-
    forall(member(N/A, Declared),
           ( functor(H, N, A), ( predicate_property(kb:H, number_of_clauses(0)) -> abolish(kb:N/A) ; true ) )).

control((A, B), [A, B]).
control((A ; B), [A, B]).
control((A -> B), [A, B]).
control((A *-> B), [A, B]).
control(\+ A, [A]).

general_safe(G) :-
    callable(G), \+ G = _:_,
    functor(G, N, A),
    \+ ( compound(G), arg(_, G, Arg), nonvar(Arg), Arg = _:_ ),
    (   sandbox_general(N, A, Safe) -> true
    ;   functor(Gen, N, A),
        ( catch(safe_goal(kb:Gen), _, fail) -> Safe = true ; Safe = false ),
        assertz(sandbox_general(N, A, Safe))
    ),
    Safe == true.

% The wrappers check what they call when they run: to library(sandbox) they are safe in themselves.
sandbox:safe_primitive(user:checked(_)).
sandbox:safe_primitive(user:lp_closure(_, _)).
sandbox:safe_primitive(user:lp_closure(_, _, _)).
sandbox:safe_primitive(user:lp_closure(_, _, _, _)).
sandbox:safe_primitive(user:lp_closure(_, _, _, _, _)).
sandbox:safe_primitive(user:lp_closure(_, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_closure(_, _, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_closure(_, _, _, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_lambda(_, _, _, _)).
sandbox:safe_primitive(user:lp_lambda(_, _, _, _, _)).
sandbox:safe_primitive(user:lp_lambda(_, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_lambda(_, _, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_lambda(_, _, _, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_lambda(_, _, _, _, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_lambda(_, _, _, _, _, _, _, _, _, _)).
sandbox:safe_primitive(user:lp_apply(_, _)).
sandbox:safe_primitive(user:lp_dcg(_, _, _)).
sandbox:safe_primitive(user:lp_dcg_body(_, _, _, _, _)).
sandbox:safe_primitive(user:lp_recover(_, _, _)).
sandbox:safe_primitive(user:lp_tnot(_)).
sandbox:safe_primitive(user:lp_set_flag(_, _)).
sandbox:safe_primitive(user:safe_assert(_, _, _)).
sandbox:safe_primitive(user:literal_assert(_, _, _)).
sandbox:safe_primitive(user:lp_colon(_)).
sandbox:safe_primitive(user:lp_format(_)).
sandbox:safe_primitive(user:lp_limit_result(_)).
sandbox:safe_primitive(user:lp_options(_)).
sandbox:safe_primitive(user:lp_global(_)).
sandbox:safe_primitive(user:lp_option_goal(_, _)).
sandbox:safe_primitive(user:lp_option_goal(_, _, _)).
sandbox:safe_primitive(user:lp_option_goal(_, _, _, _)).

% allow_effects(+Indicators, -Allowed): the builtins a command allowed the KB's own rules (--allow),
% declared safe to library(sandbox) through its own declaration check (a meta-predicate cannot be).
allow_effects(Indicators, Allowed) :-
    findall(sandbox:safe_primitive(M:H),
            ( member(N/A, Indicators), functor(H, N, A), effect_module(H, M) ), Clauses),
    with_output_to(string(Text), forall(member(C, Clauses), portray_clause(C))),
    setup_call_cleanup(open_string(Text, In), load_files(lp_allowed_effects, [stream(In), silent(true)]),
                       close(In)),
    findall(N/A, ( member(N/A, Indicators), functor(H, N, A), effect_module(H, M),
                   clause(sandbox:safe_primitive(M:H), true) ), Allowed).

effect_module(H, M) :- predicate_property(user:H, imported_from(M)), !.
effect_module(H, system) :- predicate_property(system:H, defined).

% --- messages ---------------------------------------------------------------------------------------
% While a goal runs, no message is printed: printing runs format's ~@ on the message's arguments (as in
% print_message(warning, format("~@", [G])) with G from the goal), and nobody reads the engine's
% stderr. Defined before the KB loads, this hook comes before any message_hook of the KB's own.

:- multifile user:message_hook/3.
user:message_hook(_, _, _) :-
    nb_current(lp_fired, Fired), Fired \== off.

% --- limits that fired --------------------------------------------------------------------------------
% While a bounded goal runs (lp_fired is `none`), the first time, inference or refusal exception raised
% is noted here, before any catch sees it: a goal that swallowed it is still unknown. (Stack overflows
% do not reach this hook; the catch/3 rewriting above re-throws them.)

:- multifile user:prolog_exception_hook/4.
user:prolog_exception_hook(Ball, _, _, _) :-
    nonvar(Ball), engine_ball(Ball),
    nb_current(lp_fired, none),
    nb_setval(lp_fired, Ball),
    fail.
